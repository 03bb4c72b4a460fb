#!/usr/bin/env python3
"""Captures what real PostgreSQL drivers write and read, for the wire parser's tests and fuzz seeds.

Starts a throw-away PostgreSQL 15 (tests/e2e/pgserver.py), puts a logging TCP proxy in front of it and
runs each driver's script through the proxy: asyncpg (/usr/bin/python3), node-postgres
(tests/e2e/drivers/node_modules/pg), PostgreSQL JDBC (/usr/share/java/postgresql.jar) and psql. Each
connection becomes captures/<driver>-<n>.txt, one line per recv() the proxy made, in stream order:
"> hex" the client wrote, "< hex" the server answered. The chunks are the sizes the driver wrote (the
proxy forwards each one as it came), and the tests split them further at every offset.

    tests/agent/protocols/pg/capture.py            # rewrites captures/
"""
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/e2e"))
from pgserver import PSQL, PgServer  # noqa: E402

OUT = os.path.join(HERE, "captures")


class Proxy:
    def __init__(self, target_port):
        self.target = target_port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.conns = []  # one list of (dir, bytes) per accepted connection, in accept order
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            log = []
            with self.lock:
                self.conns.append(log)
            threading.Thread(target=self._pump, args=(c, log), daemon=True).start()

    def _pump(self, c, log):
        s = socket.create_connection(("127.0.0.1", self.target))
        for x in (c, s):
            x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            r, _, _ = select.select([c, s], [], [])
            for x in r:
                data = x.recv(65536)
                if not data:
                    c.close(), s.close()
                    return
                (s if x is c else c).sendall(data)
                log.append((">" if x is c else "<", data))

    def take(self):
        with self.lock:
            conns, self.conns = self.conns, []
        return conns


ASYNCPG = r'''
import asyncio, asyncpg, sys
async def main(port):
    c = await asyncpg.connect(host="127.0.0.1", port=port, user="postgres", database="postgres")
    await c.execute("CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text, price numeric(10,2), "
                    "at timestamptz, u uuid, ok bool, f float8, b bytea)")
    await c.execute("TRUNCATE items; INSERT INTO items VALUES (1, 'one', 1.50, '2024-01-02 03:04:05+00', "
                    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', true, 2.5, '\\x0102'); SELECT 1")
    await c.fetchrow("SELECT name FROM items WHERE id = $1", 1)
    await c.fetchrow("SELECT name FROM items WHERE id = $1", 2)
    await c.fetch("SELECT * FROM items WHERE price > $1 AND at < $2 AND u = $3 AND ok = $4 AND f < $5 AND b <> $6",
                  __import__("decimal").Decimal("0.5"), __import__("datetime").datetime(2030, 1, 1, tzinfo=__import__("datetime").timezone.utc),
                  __import__("uuid").UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), True, 3.0, b"\x00")
    try:
        await c.fetch("SELECT * FROM missing_table WHERE id = $1", 1)
    except asyncpg.PostgresError:
        pass
    await c.executemany("INSERT INTO items (id, name) VALUES ($1, $2)", [(10, "a"), (11, "b"), (12, "c")])
    await c.copy_records_to_table("items", records=[(20, "x"), (21, "y")], columns=["id", "name"])
    async with c.transaction():
        cur = await c.cursor("SELECT id FROM items ORDER BY id")
        await cur.fetch(2)
        await cur.fetch(2)
    await c.add_listener("chan", lambda *a: None)
    await c.execute("NOTIFY chan, 'hello'")
    await c.execute("SELECT pg_sleep(0.05)")
    await c.close()
asyncio.run(main(int(sys.argv[1])))
'''

NODE = r'''
const { Client } = require(process.argv[3]);
(async () => {
  const c = new Client({ host: "127.0.0.1", port: +process.argv[2], user: "postgres", database: "postgres" });
  await c.connect();
  await c.query("SELECT name FROM items WHERE id = $1", [1]);
  await c.query("SELECT name FROM items WHERE id = $1", [2]);
  await c.query({ name: "by-id", text: "SELECT name FROM items WHERE id = $1", values: [1] });
  await c.query({ name: "by-id", text: "SELECT name FROM items WHERE id = $1", values: [10] });
  await c.query("UPDATE items SET name = 'z' WHERE id >= 10; SELECT count(*) FROM items");
  try { await c.query("SELECT * FROM missing_table WHERE id = $1", [1]); } catch (e) {}
  try { await c.query("SELECT * FROM missing_table"); } catch (e) {}
  await c.query("");
  await c.query("SELECT 1");
  await c.end();
})();
'''

JAVA = r'''
import java.sql.*;
public class Cap {
  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?user=postgres")) {
      try (PreparedStatement p = c.prepareStatement("SELECT name FROM items WHERE id = ?")) {
        for (int i = 0; i < 7; i++) {  // the 5th execution makes it a named server-side statement
          p.setInt(1, i % 3);
          try (ResultSet r = p.executeQuery()) { while (r.next()) r.getString(1); }
        }
      }
      try (Statement s = c.createStatement()) {
        s.execute("UPDATE items SET name = 'j' WHERE id = 1; SELECT id FROM items");
        try { s.executeQuery("SELECT * FROM missing_table"); } catch (SQLException e) {}
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
        for (int i = 0; i < 3; i++) { p.setInt(1, 100 + i); p.setString(2, "b" + i); p.addBatch(); }
        p.executeBatch();
      }
      c.setAutoCommit(false);
      try (PreparedStatement p = c.prepareStatement("SELECT id FROM items ORDER BY id")) {
        p.setFetchSize(2);
        try (ResultSet r = p.executeQuery()) { int n = 0; while (r.next() && n++ < 5) r.getInt(1); }
      }
      c.commit();
    }
  }
}
'''


def write(name, conns):
    for i, log in enumerate(conns):
        if not log:
            continue
        path = os.path.join(OUT, f"{name}-{i}.txt")
        with open(path, "w") as f:
            for d, data in log:
                f.write(f"{d} {data.hex()}\n")
        print(path, len(log), "chunks")


def main():
    os.makedirs(OUT, exist_ok=True)
    with PgServer() as pg:
        proxy = Proxy(pg.port)
        env = pg.client_env()
        env.pop("LD_PRELOAD", None)
        subprocess.run(["/usr/bin/python3", "-c", ASYNCPG, str(proxy.port)], check=True, env=env, timeout=60)
        write("asyncpg", proxy.take())
        pg_mod = os.path.join(ROOT, "tests/e2e/drivers/node_modules/pg")
        subprocess.run(["node", "-e", NODE, "x", str(proxy.port), pg_mod], check=True, env=env, timeout=60)
        write("node-pg", proxy.take())
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "Cap.java"), "w") as f:
                f.write(JAVA)
            subprocess.run(["javac", "-d", d, os.path.join(d, "Cap.java")], check=True)
            cp = f"{d}:/usr/share/java/postgresql.jar"
            subprocess.run(["java", "-cp", cp, "Cap", str(proxy.port)], check=True, env=env, timeout=60)
        write("jdbc", proxy.take())
        sql = "SELECT 1; SELECT 'a;b' AS x; -- c;\nSELECT $$d;e$$;\nCOPY items (id, name) TO STDOUT;\n"
        subprocess.run([PSQL, "-h", "127.0.0.1", "-p", str(proxy.port), "-U", "postgres", "-d", "postgres",
                        "-c", sql, "-c", "COPY items (id, name) FROM STDIN", "-c", "SELECT nope"],
                       input="200\tp\n201\tq\n\\.\n", text=True, env=env, timeout=60, capture_output=True)
        write("psql", proxy.take())


if __name__ == "__main__":
    main()
