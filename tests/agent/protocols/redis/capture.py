#!/usr/bin/env python3
"""Records what a real client and a real server say, for the Redis and memcached parsers' tests: a
recording TCP proxy in front of SERVER_PORT on loopback, and CMD run with every `{port}` in its arguments
replaced by the proxy's port (stdin passed through). Each connection becomes one conversation in OUT
(captures/*.jsonl, the format make_captures.py reads): ["conn", ""], then one line per recv() the proxy
made, in the order it made them — [">", hex] what the client wrote, ["<", hex] what the server answered.
Each chunk is forwarded as it came, so the chunks are the sizes the programs wrote.

    capture.py OUT SERVER_PORT -- CMD ARGS…          (appends to OUT)
"""
import json
import select
import socket
import subprocess
import sys
import threading


def main():
    out, server_port = sys.argv[1], int(sys.argv[2])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    port = lsock.getsockname()[1]
    convs, done = [], threading.Event()

    def serve():
        pairs = {}  # socket -> (peer socket, conversation, direction)
        while not done.is_set() or pairs:
            r, _, _ = select.select([lsock, *pairs], [], [], 0.05)
            for s in r:
                if s is lsock:
                    c, _ = lsock.accept()
                    u = socket.create_connection(("127.0.0.1", server_port))
                    conv = []
                    convs.append(conv)
                    pairs[c] = (u, conv, ">")
                    pairs[u] = (c, conv, "<")
                    continue
                if s not in pairs:
                    continue
                peer, conv, d = pairs[s]
                b = s.recv(65536)
                if not b:
                    for x in (s, peer):
                        pairs.pop(x, None)
                        x.close()
                    continue
                conv.append([d, b.hex()])
                peer.sendall(b)
            if done.is_set() and not r:
                break

    t = threading.Thread(target=serve)
    t.start()
    stdin = sys.stdin.buffer.read() if not sys.stdin.isatty() else None
    r = subprocess.run([a.replace("{port}", str(port)) for a in cmd], input=stdin, capture_output=True)
    done.set()
    t.join()
    with open(out, "a") as f:
        for conv in convs:
            if conv:
                f.write(json.dumps(["conn", ""]) + "\n")
                for c in conv:
                    f.write(json.dumps(c) + "\n")
    sys.stdout.buffer.write(r.stdout)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
