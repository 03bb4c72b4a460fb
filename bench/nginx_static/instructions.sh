#!/usr/bin/env bash
# The agent's cost on nginx static in instructions, which a shared machine's load does not change
# (run.sh measures CPU time, which it does). nginx (one process: master_process off, same request path
# as a worker) runs under valgrind's callgrind, bare or under the agent; after WARMUP requests the
# counters are zeroed, then REQUESTS requests go one after another over CONNS keep-alive connections
# (round robin), and the instructions of the whole process (every thread: the agent thread's encoding
# and sending count) are divided by REQUESTS. System calls are one instruction each to callgrind: the
# kernel's share, and so the thread-CPU clock reads themselves, are in run.sh's figures only.
# Usage: bench/nginx_static/instructions.sh BUILD_DIR   (env: WARMUP=500 REQUESTS=3000 CONNS=10
#        KEEP=dir: keep the callgrind files for callgrind_annotate; AGENT_ENV="K=V ...": more settings for
#        the agent run, e.g. TXRAY_CPU_SAMPLES=0 — under valgrind nginx runs ~50x slower, so the sampler,
#        which fires per 10 ms of CPU, takes ~50x more samples per request than at full speed)
# It also prints the agent's instructions split by thread: nginx's own thread (host) and the rest (the
# agent thread), from a second file per thread (--separate-threads=yes).
set -euo pipefail
BUILD=$(realpath "${1:-build}")
AGENT=${AGENT_LIB:-$BUILD/lib/libtxray-agent.so}
TXRAY=$BUILD/bin/txray
NGINX=${NGINX:-/usr/sbin/nginx}
WARMUP=${WARMUP:-500}
REQUESTS=${REQUESTS:-3000}
CONNS=${CONNS:-10}
for tool in valgrind callgrind_control python3 "$NGINX"; do
  command -v "$tool" >/dev/null || { echo "instructions: $tool is missing (apt-get install valgrind nginx-light)" >&2; exit 1; }
done
WORK=$(mktemp -d)
chmod 755 "$WORK"
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/www" "$WORK/logs"
printf 'hello\n' >"$WORK/www/f.txt"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/tmp_body; proxy_temp_path $WORK/tmp_proxy; fastcgi_temp_path $WORK/tmp_fcgi;
  uwsgi_temp_path $WORK/tmp_uwsgi; scgi_temp_path $WORK/tmp_scgi;
  server { listen 127.0.0.1:$PORT; root $WORK/www; location / { } }
}
CONF
cat >"$WORK/client.py" <<'PY'
import http.client, sys
port, n, conns = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cs = [http.client.HTTPConnection("127.0.0.1", port, timeout=300) for _ in range(conns)]
for i in range(n):
    c = cs[i % conns]
    c.request("GET", "/f.txt")
    r = c.getresponse()
    assert r.read() == b"hello\n" and r.status == 200, r.status
PY

"$TXRAY" collect --listen "ipc://$WORK/collect.sock" --db "$WORK/store.db" --status-interval 0 2>"$WORK/collect.err" &
PIDS="$!"

count() {  # $1 = bare|agent; prints instructions per request of the whole nginx process
  local env=(env -u LD_PRELOAD)
  # shellcheck disable=SC2206
  [ "$1" = agent ] && env+=(LD_PRELOAD=$AGENT TXRAY_COLLECTOR=ipc://$WORK/collect.sock TXRAY_APP=bench-nginx ${AGENT_ENV:-})
  rm -f "$WORK"/cg.out*
  "${env[@]}" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$WORK/cg.out" \
    "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
  local pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/f.txt" >/dev/null 2>&1 && break
    sleep 0.1
  done
  python3 "$WORK/client.py" "$PORT" "$WARMUP" "$CONNS"
  sleep 0.5
  callgrind_control -z $pid >/dev/null 2>&1
  python3 "$WORK/client.py" "$PORT" "$REQUESTS" "$CONNS"
  sleep 0.2  # the agent thread's next poll (5 ms) sends what the last requests queued
  callgrind_control -d $pid >/dev/null 2>&1
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  # One file per thread (cg.out.1-01: nginx's own thread, -02 on: the agent thread), dumped by -d.
  local files; files=$(ls "$WORK"/cg.out.*-[0-9]* 2>/dev/null | grep -E '\.[0-9]+-[0-9]+$' || true)
  [ -n "$files" ] || { echo "instructions: no callgrind dump" >&2; ls "$WORK" >&2; return 1; }
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; for f in $files; do cp "$f" "$KEEP/cg.$1.${f##*-}"; done; fi
  local host=0 rest=0 f ir
  for f in $files; do
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    case "$f" in *-01) host=$((host + ir)) ;; *) rest=$((rest + ir)) ;; esac
  done
  echo "$(((host + rest) / REQUESTS)) $((host / REQUESTS)) $((rest / REQUESTS))"
}

read -r b bh _ <<<"$(count bare)"
read -r a ah aa <<<"$(count agent)"
echo "nginx_static instructions: nginx under callgrind, $WARMUP warm-up requests, then $REQUESTS counted over $CONNS keep-alive connections${AGENT_ENV:+ (agent: $AGENT_ENV)}"
echo "  bare $b, agent $a instructions per request (whole process): agent adds $((a - b)) ($(awk -v a=$a -v b=$b 'BEGIN {printf "%+.1f%%", 100*(a-b)/b}'))"
echo "  by thread: nginx's thread $bh -> $ah (+$((ah - bh))), agent thread +$aa"
