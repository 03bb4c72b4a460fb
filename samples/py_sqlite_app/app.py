#!/usr/bin/python3
"""A small web shop over SQLite: Python's http.server + sqlite3, used by txray's SQL tests and demos.

    app.py --port 8080 --db shop.db [--items 200]

Each request runs a few real queries (the statements and row counts are listed per route below, so a
test can check the profile against them). Responses are JSON; every route answers with Content-Length.

  GET  /items?limit=K        SELECT … LIMIT ?                     -> K rows
  GET  /item/ID              SELECT … WHERE id = ?                -> 1 row (404 when missing)
  GET  /search?q=TEXT        SELECT … WHERE name LIKE ?           -> matching rows
  GET  /report               SELECT count(*) …; SELECT category, sum(price) … GROUP BY category
  POST /orders?item=ID&qty=N INSERT INTO orders …; UPDATE items SET stock = stock - ? …  (in one transaction)
  GET  /fail                 a query on a table that does not exist -> 500
"""
import argparse
import json
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

CATEGORIES = ["tools", "books", "garden", "toys", "food"]


def create(db_path, items):
    con = sqlite3.connect(db_path)
    con.executescript("""
        DROP TABLE IF EXISTS orders;
        DROP TABLE IF EXISTS items;
        CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                           price REAL NOT NULL, stock INTEGER NOT NULL);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
                            qty INTEGER NOT NULL);
    """)
    con.executemany("INSERT INTO items(id, name, category, price, stock) VALUES (?, ?, ?, ?, ?)",
                    [(i, f"item-{i:04d}", CATEGORIES[i % len(CATEGORIES)], 1.5 * i, 1000) for i in range(1, items + 1)])
    con.commit()
    con.close()


class Shop(BaseHTTPRequestHandler):
    con = None  # one connection, opened before serving (the server is single-threaded)

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        cur = self.con.cursor()
        try:
            if url.path == "/items":
                limit = int(q.get("limit", ["10"])[0])
                rows = cur.execute("SELECT id, name, price FROM items ORDER BY id LIMIT ?", (limit,)).fetchall()
                return self.reply(200, rows)
            if url.path.startswith("/item/"):
                row = cur.execute("SELECT id, name, category, price, stock FROM items WHERE id = ?",
                                  (int(url.path[len("/item/"):]),)).fetchone()
                return self.reply(200 if row else 404, row)
            if url.path == "/search":
                rows = cur.execute("SELECT id, name FROM items WHERE name LIKE ? ORDER BY id",
                                   ("%" + q.get("q", [""])[0] + "%",)).fetchall()
                return self.reply(200, rows)
            if url.path == "/report":
                total = cur.execute("SELECT count(*) FROM items").fetchone()[0]
                by_cat = cur.execute("SELECT category, sum(price) FROM items GROUP BY category ORDER BY category").fetchall()
                return self.reply(200, {"items": total, "by_category": by_cat})
            if url.path == "/fail":
                cur.execute("SELECT * FROM no_such_table WHERE id = 7").fetchall()
            return self.reply(404, {"error": "not found"})
        except sqlite3.Error as e:
            return self.reply(500, {"error": str(e)})
        finally:
            cur.close()

    def do_POST(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        if url.path != "/orders":
            return self.reply(404, {"error": "not found"})
        item, qty = int(q["item"][0]), int(q["qty"][0])
        with self.con:  # BEGIN … COMMIT
            self.con.execute("INSERT INTO orders(item_id, qty) VALUES (?, ?)", (item, qty))
            cur = self.con.execute("UPDATE items SET stock = stock - ? WHERE id = ?", (qty, item))
        return self.reply(201, {"updated": cur.rowcount})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--items", type=int, default=200)
    a = ap.parse_args()
    create(a.db, a.items)
    Shop.con = sqlite3.connect(a.db)
    srv = HTTPServer(("127.0.0.1", a.port), Shop)
    print(f"py_sqlite_app: serving on 127.0.0.1:{a.port}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
