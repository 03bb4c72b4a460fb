#!/usr/bin/env bash
# What the agent adds per memcached command in instructions, which a shared machine's load does not
# change (run.py measures CPU time, which it does). memcslap (one thread, -t get: its sets, then its gets)
# runs under valgrind's callgrind for N1 and N2 executions, bare and with the agent preloaded in process
# mode (one transaction: its first 1,000 rows kept, the rest folded into summary lines), counting only the
# instructions inside the program's socket calls (see COLLECT: the agent's hooks, the parser, the rows;
# not the transport thread's one encoding at exit); the commands of each run are the server's own count
# (stats: cmd_get + cmd_set), and (instructions at N2 - at N1) / (commands at N2 - at N1) is one
# command's share free of start-up. System calls are one instruction each to callgrind: the kernel's
# share is in run.py's figures.
# Usage: bench/cache_memcached/instructions.sh BUILD_DIR   (env: N1=5000 N2=20000)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
AGENT=$BUILD/lib/libtxray-agent.so
N1=${N1:-5000}
N2=${N2:-20000}
command -v valgrind >/dev/null || { echo "instructions: valgrind is missing" >&2; exit 1; }
WORK=$(mktemp -d)
# Only what runs inside the program's socket calls is counted (the agent's hooks and what they call, the
# real call included; bare: libc's own wrappers): the clients' own work varies with wall time
# (redis-benchmark's throughput display runs on a timer), the calls' work does not.
COLLECT=(--collect-atstart=no)
for f in send recv sendto recvfrom sendmsg recvmsg write read writev readv; do COLLECT+=(--toggle-collect="$f"); done
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
USER_ARG=()
[ "$(id -u)" = 0 ] && USER_ARG=(-u root)
memcached -p "$PORT" -l 127.0.0.1 -U 0 -m 256 "${USER_ARG[@]}" &
SERVER=$!
trap 'kill $SERVER; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
commands() {
  /usr/bin/python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n")
b = b""
while not b.endswith(b"END\r\n"):
    b += s.recv(65536)
st = dict(l.split()[1:3] for l in b.decode().splitlines() if l.startswith("STAT "))
print(int(st["cmd_get"]) + int(st["cmd_set"]))
PY
}
for _ in $(seq 50); do commands >/dev/null 2>&1 && break; sleep 0.1; done

run() {  # $1 = bare|agent, $2 = executions; prints "instructions commands"
  local env=(env -u LD_PRELOAD)
  [ "$1" = agent ] && env+=(LD_PRELOAD="$AGENT" TXRAY_MODE=process TXRAY_COLLECTOR="ipc://$WORK/nobody.sock")
  local before after
  before=$(commands)
  "${env[@]}" valgrind --tool=callgrind "${COLLECT[@]}" --callgrind-out-file="$WORK/cg" \
    memcslap --servers=127.0.0.1:"$PORT" -t get -c 1 -e "$2" >/dev/null 2>"$WORK/vg.err"
  after=$(commands)
  echo "$(awk '/^(summary|totals):/ {print $2; exit}' "$WORK/cg") $((after - before))"
}

echo "cache_memcached instructions: per command of memcslap -t get -c 1, callgrind, -e $N1 and -e $N2"
read -r b1 c1 <<<"$(run bare $N1)"
read -r b2 c2 <<<"$(run bare $N2)"
read -r a1 d1 <<<"$(run agent $N1)"
read -r a2 d2 <<<"$(run agent $N2)"
awk -v b=$((b2 - b1)) -v nb=$((c2 - c1)) -v a=$((a2 - a1)) -v na=$((d2 - d1)) 'BEGIN {
  printf "  memcslap  bare %.0f, agent %.0f instructions per command (%d and %d commands): the agent adds %.0f\n",
         b / nb, a / na, nb, na, a / na - b / nb }'
