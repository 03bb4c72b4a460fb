'use strict';
// The Node.js front of the attribution tests: `GET /r/<id>` calls the back-end's `GET /b/<id>` once and
// answers `r <id> <status> <back-end body>`. Usage: node node_front.js PORT BACKEND_PORT agent|fetch
//   agent: http.get through one http.Agent({keepAlive: true, maxSockets: 8}) (requests queue for sockets)
//   fetch: the global fetch (undici's keep-alive pool)
// Each request waits 0-2 ms (a timer) before its call, so calls and answers interleave in every order.
const http = require('http');

const [port, backPort, client] = process.argv.slice(2);
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
  setTimeout(() => call(id, (err, status, body) => {
    if (err) {
      res.statusCode = 502;
      res.end(String(err));
      return;
    }
    res.setHeader('content-type', 'text/plain');
    res.end(`r ${id} ${status} ${body}`);
  }), Number(id) % 3);
});
server.keepAliveTimeout = 60000;
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
