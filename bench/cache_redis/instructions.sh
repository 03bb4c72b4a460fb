#!/usr/bin/env bash
# What the agent adds per Redis command in instructions, which a shared machine's load does not change
# (run.py measures CPU time, which it does). redis-benchmark (one connection, -t get) runs under
# valgrind's callgrind for exactly N1 and N2 requests, bare and with the agent preloaded in process mode
# (one transaction: its first 1,000 rows kept, the rest folded into summary lines), counting only the
# instructions inside the program's socket calls (see COLLECT); (instructions at N2 - at N1) / (N2 - N1)
# is one command's share free of start-up, and agent minus bare is what the agent adds per command: its
# hooks, the parser, the rows. The transport thread's work (one encoding at exit) is not in it. System
# calls are one instruction each to callgrind: the kernel's share is in run.py's figures only.
# redis-py's loop the same way, with N1/16 and N2/16 GETs.
# Usage: bench/cache_redis/instructions.sh BUILD_DIR   (env: N1=16000 N2=48000)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
AGENT=$BUILD/lib/libtxray-agent.so
N1=${N1:-16000}
N2=${N2:-48000}
command -v valgrind >/dev/null || { echo "instructions: valgrind is missing" >&2; exit 1; }
WORK=$(mktemp -d)
# Only what runs inside the program's socket calls is counted (the agent's hooks and what they call, the
# real call included; bare: libc's own wrappers): the clients' own work varies with wall time
# (redis-benchmark's throughput display runs on a timer), the calls' work does not.
COLLECT=(--collect-atstart=no)
for f in send recv sendto recvfrom sendmsg recvmsg write read writev readv; do COLLECT+=(--toggle-collect="$f"); done
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" >/dev/null &
SERVER=$!
trap 'kill $SERVER; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

ir() {  # $1 = bare|agent, $2 = pipeline depth, $3 = requests; prints the program's instructions
  local env=(env -u LD_PRELOAD)
  [ "$1" = agent ] && env+=(LD_PRELOAD="$AGENT" TXRAY_MODE=process TXRAY_COLLECTOR="ipc://$WORK/nobody.sock")
  "${env[@]}" valgrind --tool=callgrind "${COLLECT[@]}" --callgrind-out-file="$WORK/cg" \
    redis-benchmark -p "$PORT" -c 1 -P "$2" -n "$3" -r 100000 -t get -q >/dev/null 2>"$WORK/vg.err"
  awk '/^(summary|totals):/ {print $2; exit}' "$WORK/cg"
}

# The same for redis-py (a Python client writing RESP itself): a loop of GETs, N1/16 and N2/16 of them.
cat >"$WORK/loop.py" <<'PY'
import sys
import redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
r.set("item:1", "x" * 32)
for _ in range(int(sys.argv[2])):
    r.get("item:1")
PY
ir_py() {  # $1 = bare|agent, $2 = GETs
  local env=(env -u LD_PRELOAD)
  [ "$1" = agent ] && env+=(LD_PRELOAD="$AGENT" TXRAY_MODE=process TXRAY_COLLECTOR="ipc://$WORK/nobody.sock")
  "${env[@]}" valgrind --tool=callgrind "${COLLECT[@]}" --callgrind-out-file="$WORK/cg" /usr/bin/python3 "$WORK/loop.py" "$PORT" "$2" \
    >/dev/null 2>"$WORK/vg.err"
  awk '/^(summary|totals):/ {print $2; exit}' "$WORK/cg"
}

echo "cache_redis instructions: per GET of redis-benchmark -c 1, callgrind, ($N2 - $N1) requests"
for p in 16 1; do
  n1=$N1 n2=$N2
  [ "$p" = 1 ] && n1=$((N1 / 8)) n2=$((N2 / 8))
  b=$(( $(ir bare "$p" $n2) - $(ir bare "$p" $n1) ))
  a=$(( $(ir agent "$p" $n2) - $(ir agent "$p" $n1) ))
  awk -v b=$b -v a=$a -v n=$((n2 - n1)) -v p=$p 'BEGIN {
    printf "  -P %-3s bare %.0f, agent %.0f instructions per command: the agent adds %.0f\n", p, b / n, a / n, (a - b) / n }'
done
n1=$((N1 / 16)) n2=$((N2 / 16))
b=$(( $(ir_py bare $n2) - $(ir_py bare $n1) ))
a=$(( $(ir_py agent $n2) - $(ir_py agent $n1) ))
awk -v b=$b -v a=$a -v n=$((n2 - n1)) 'BEGIN {
  printf "  redis-py GET loop bare %.0f, agent %.0f instructions per command: the agent adds %.0f\n", b / n, a / n, (a - b) / n }'
