"""The asyncio front of the attribution tests: `GET /r/<id>` calls the back-end's `GET /b/<id>` once over
a new connection (`asyncio.open_connection`) and answers `r <id> <status> <back-end body>`.
Usage: asyncio_front.py PORT BACKEND_PORT streams|executor|protocol
  streams:  asyncio.start_server, one task per connection (keep-alive)
  executor: as streams, and first a sqlite3 query in loop.run_in_executor whose text carries the id
            (`SELECT count(*) AS req_<id> FROM t`; the alias, an identifier, survives literal masking);
            the answer adds ` sql <count>`
  protocol: loop.create_server with a Protocol that starts a task per request from data_received
  sockets:  as streams, the call made with a plain socket and loop.sock_connect / sock_sendall / sock_recv
Each request waits 0-2 ms before its call, so calls and answers interleave in every order."""
import asyncio
import signal
import socket
import sqlite3
import sys
import threading

PORT, BACK, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
_db = threading.local()


def query(rid):
    con = getattr(_db, "con", None)
    if con is None:
        con = _db.con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE t (k INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    return con.execute(f"SELECT count(*) AS req_{rid} FROM t").fetchone()[0]


async def call_back(rid):
    reader, writer = await asyncio.open_connection("127.0.0.1", BACK)
    writer.write(f"GET /b/{rid} HTTP/1.1\r\nHost: 127.0.0.1:{BACK}\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


async def call_back_sockets(rid):
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", BACK))
        await loop.sock_sendall(sock, f"GET /b/{rid} HTTP/1.1\r\nHost: 127.0.0.1:{BACK}\r\n"
                                      f"Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := await loop.sock_recv(sock, 4096):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


async def answer(rid):
    await asyncio.sleep((int(rid) % 3) / 1000)
    extra = ""
    if MODE == "executor":
        n = await asyncio.get_running_loop().run_in_executor(None, query, rid)
        extra = f" sql {n}"
    status, body = await (call_back_sockets if MODE == "sockets" else call_back)(rid)
    text = f"r {rid} {status} {body}{extra}".encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)


def request_id(head):
    return head.split(b" ", 2)[1].decode().rsplit("/", 1)[1]


async def serve_stream(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            writer.write(await answer(request_id(head)))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


class FrontProtocol(asyncio.Protocol):
    tasks = set()  # the loop holds its tasks weakly

    def connection_made(self, transport):
        self.transport, self.buf = transport, b""

    def data_received(self, data):
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, _, self.buf = self.buf.partition(b"\r\n\r\n")
            task = asyncio.get_running_loop().create_task(self.respond(request_id(head)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def respond(self, rid):
        self.transport.write(await answer(rid))


async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if MODE == "protocol":
        server = await loop.create_server(FrontProtocol, "127.0.0.1", PORT, backlog=128)
    else:
        server = await asyncio.start_server(serve_stream, "127.0.0.1", PORT, backlog=128)
    async with server:
        await stop.wait()


asyncio.run(main())
