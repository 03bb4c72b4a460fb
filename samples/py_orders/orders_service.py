"""txray's Python order service: GetOrderStatus / GetCustomers over HTTP with JSON (POST /json/<Method>)
and SOAP/XML (POST /soap/<Method>), on the same database and with the same messages as the C++
txray-orders, using only the standard library (http.server, sqlite3, json, xml.etree).

It knows nothing of txray: run it under `txray run -- /usr/bin/python3 orders_service.py …` and every
request becomes a transaction with its SQL steps.
"""
import argparse
import json
import signal
import socket
import sqlite3
import sys
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

import orders_data

NS = "http://txray.dev/samples/orders/"
STATUS_SQL = "SELECT status FROM orders WHERE id = ?"
CUSTOMERS_SQL = ("SELECT id, name, company, email, phone, address, city, country, balance_cents FROM customers "
                 "WHERE id > ? ORDER BY id LIMIT ?")
FIELDS = ["id", "name", "company", "email", "phone", "address", "city", "country", "balanceCents"]
SOAP_FIELDS = [("CustomerId", "xsd:long"), ("Name", "xsd:string"), ("Company", "xsd:string"),
               ("Email", "xsd:string"), ("Phone", "xsd:string"), ("Address", "xsd:string"),
               ("City", "xsd:string"), ("Country", "xsd:string"), ("BalanceCents", "xsd:long")]
MAX_PAGE = 1000
ENVELOPE_OPEN = ('<?xml version="1.0" encoding="utf-8"?>\n'
                 '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" '
                 'xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" '
                 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                 'xmlns:xsd="http://www.w3.org/2001/XMLSchema">\n'
                 '  <soap:Body soap:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">\n')
ENVELOPE_CLOSE = "  </soap:Body>\n</soap:Envelope>\n"


class ServiceError(Exception):
    def __init__(self, http_status, message):
        super().__init__(message)
        self.http_status = http_status


class Repository:
    """Pooled: one connection per serving thread. Not pooled: a new connection per request."""

    def __init__(self, path, pooled):
        self.path = path
        self.pooled = pooled
        self.local = threading.local()

    def _connection(self):
        if not self.pooled:
            return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        con = getattr(self.local, "con", None)
        if con is None:
            con = self.local.con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        return con

    def get_order_status(self, order_id):
        con = self._connection()
        try:
            row = con.execute(STATUS_SQL, (order_id,)).fetchone()
        finally:
            if not self.pooled:
                con.close()
        if row is None:
            raise ServiceError(404, f"no order {order_id}")
        return row[0]

    def get_customers(self, customer_id, n):
        if not 1 <= n <= MAX_PAGE:
            raise ServiceError(400, f"n must be 1..{MAX_PAGE}")
        con = self._connection()
        try:
            return con.execute(CUSTOMERS_SQL, (customer_id, n)).fetchall()
        finally:
            if not self.pooled:
                con.close()


def _int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ServiceError(400, f"bad {what}")
    return value


# --- JSON channel -----------------------------------------------------------------------------------

def json_call(repo, method, body):
    try:
        req = json.loads(body)
    except ValueError as e:
        raise ServiceError(400, f"bad JSON request: {e}")
    if not isinstance(req, dict):
        raise ServiceError(400, "bad JSON request: not an object")
    if method == "GetOrderStatus":
        return {"status": repo.get_order_status(_int(req.get("orderId"), "orderId"))}
    rows = repo.get_customers(_int(req.get("customerId"), "customerId"), _int(req.get("n"), "n"))
    return {"customers": [dict(zip(FIELDS, row)) for row in rows]}


# --- SOAP channel -----------------------------------------------------------------------------------

def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _child(elem, name):
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


def _soap_int(call, name):
    e = _child(call, name)
    try:
        return int(e.text)
    except (AttributeError, TypeError, ValueError):
        raise ServiceError(400, f"SOAP: missing or bad {name}")


def _value(indent, name, xsd_type, value):
    return f'{indent}<{name} xsi:type="{xsd_type}">{escape(str(value))}</{name}>\n'


def soap_call(repo, method, body):
    try:
        env = ET.fromstring(body)
    except ET.ParseError as e:
        raise ServiceError(400, f"XML: {e}")
    b = _child(env, "Body") if _local(env.tag) == "Envelope" else None
    call = _child(b, method) if b is not None else None
    if call is None:
        raise ServiceError(400, f"SOAP: the Body does not hold {method}")
    out = [ENVELOPE_OPEN, f'    <{method}Response xmlns="{NS}">\n']
    if method == "GetOrderStatus":
        out.append(_value("      ", "GetOrderStatusResult", "xsd:int", repo.get_order_status(_soap_int(call, "orderId"))))
    else:
        rows = repo.get_customers(_soap_int(call, "customerId"), _soap_int(call, "n"))
        out.append(f'      <GetCustomersResult xsi:type="soapenc:Array" soapenc:arrayType="Customer[{len(rows)}]">\n')
        for row in rows:
            out.append('        <Customer xsi:type="Customer">\n')
            out.extend(_value("          ", name, t, v) for (name, t), v in zip(SOAP_FIELDS, row))
            out.append("        </Customer>\n")
        out.append("      </GetCustomersResult>\n")
    out.append(f"    </{method}Response>\n")
    out.append(ENVELOPE_CLOSE)
    return "".join(out)


def soap_fault(http_status, message):
    code = "soap:Server" if http_status >= 500 else "soap:Client"
    return (ENVELOPE_OPEN + "    <soap:Fault>\n" + _value("      ", "faultcode", "xsd:string", code) +
            _value("      ", "faultstring", "xsd:string", message) + "    </soap:Fault>\n" + ENVELOPE_CLOSE)


# --- HTTP -------------------------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the C++ service
    repo = None

    def setup(self):
        super().setup()
        # Headers and body leave in two writes; without TCP_NODELAY the body waits for the client's
        # delayed ACK (40 ms a request on Linux).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # quiet: one line per request would drown the demo's output
        pass

    def _send(self, status, content_type, body):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, "text/plain", "ok\n")
        else:
            self._send(404, "text/plain", "no such resource\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        parts = self.path.split("?", 1)[0].split("/")
        if len(parts) != 3 or parts[1] not in ("json", "soap") or parts[2] not in ("GetOrderStatus", "GetCustomers"):
            self._send(404, "text/plain", "use POST /json|/soap/GetOrderStatus|GetCustomers\n")
            return
        channel, method = parts[1], parts[2]
        try:
            if channel == "json":
                self._send(200, "application/json", json.dumps(json_call(self.repo, method, body), separators=(",", ":")))
            else:
                self._send(200, "text/xml; charset=utf-8", soap_call(self.repo, method, body))
        except ServiceError as e:
            if channel == "json":
                self._send(e.http_status, "application/json", json.dumps({"error": str(e)}))
            else:
                self._send(e.http_status, "text/xml; charset=utf-8", soap_fault(e.http_status, str(e)))
        except sqlite3.Error as e:
            self._send(500, "text/plain", f"database error: {e}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="orders.db", help="database file (generated when missing)")
    ap.add_argument("--http", default="127.0.0.1:0", help="host:port to listen on (port 0 = any free port)")
    ap.add_argument("--no-pool", action="store_true", help="open a new database connection for every request")
    args = ap.parse_args()
    host, _, port = args.http.rpartition(":")
    try:
        port = int(port)
    except ValueError:
        ap.error(f"bad --http value {args.http!r}")
    if orders_data.ensure_database(args.db):
        print(f"txray-py-orders: generated {args.db}", flush=True)
    Handler.repo = Repository(args.db, pooled=not args.no_pool)
    server = ThreadingHTTPServer((host or "127.0.0.1", port), Handler)
    server.daemon_threads = True

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"txray-py-orders listening on http port {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
