'use strict';
// The Node.js front of the attribution tests: `GET /r/<id>` calls the back-end's `GET /b/<id>` once and
// answers `r <id> <status> <back-end body>`. Usage: node node_front.js PORT BACKEND_PORT agent|fetch
//   agent: http.get through one http.Agent({keepAlive: true, maxSockets: 8}) (requests queue for sockets)
//   fetch: the global fetch (undici's keep-alive pool)
// WHEN (optional): `timer` (the default): each request waits 0-2 ms (a timer) before its call, so calls
// and answers interleave in every order; `sync`: the call is made in the handler itself; `mixed`: in the
// handler for ids below 320, after the timer from then on. At SIGTERM it prints whether the shim still
// carries requests' contexts through async resources (`propagating true|false`).
const http = require('http');

const [port, backPort, client, when = 'timer'] = process.argv.slice(2);
const pool = new http.Agent({ keepAlive: true, maxSockets: 8 });

function callWithAgent(id, done) {
  const req = http.get({ host: '127.0.0.1', port: backPort, path: '/b/' + id, agent: pool }, (res) => {
    let body = '';
    res.setEncoding('latin1');
    res.on('data', (d) => { body += d; });
    res.on('end', () => done(null, res.statusCode, body));
  });
  req.on('error', (e) => done(e));
}

function callWithFetch(id, done) {
  fetch(`http://127.0.0.1:${backPort}/b/${id}`)
    .then((r) => r.text().then((t) => done(null, r.status, t)))
    .catch((e) => done(e));
}

const call = client === 'fetch' ? callWithFetch : callWithAgent;

const server = http.createServer((req, res) => {
  const m = /^\/r\/(\w+)$/.exec(req.url);
  if (!m) {
    res.statusCode = 404;
    res.end();
    return;
  }
  const id = m[1];
  const go = () => call(id, (err, status, body) => {
    if (err) {
      res.statusCode = 502;
      res.end(String(err));
      return;
    }
    res.setHeader('content-type', 'text/plain');
    res.end(`r ${id} ${status} ${body}`);
  });
  if (when === 'sync' || (when === 'mixed' && Number(id) < 320)) go();
  else setTimeout(go, Number(id) % 3);
});
server.keepAliveTimeout = 60000;
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => {
  const shim = Object.keys(require.cache).find((k) => k.endsWith('txray-hints.js'));
  if (shim) console.log(`propagating ${require.cache[shim].exports.propagating()}`);
  process.exit(0);
});
