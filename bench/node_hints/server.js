// The Node.js server of bench/node_hints: an `http` server that, per request, computes a little and
// answers; with a back-end port it first makes one outbound call over a keep-alive http.Agent.
//   node server.js compute          GET anything: ~WORK_ITERS iterations of arithmetic, then a short answer
//   node server.js call PORT        the same, then GET /b<path> on 127.0.0.1:PORT (keep-alive pool), made
//                                   synchronously in the handler
//   node server.js callawait PORT   the same call made after an `await` in an async handler
// Prints "node_hints listening on http port N" when ready; SIGTERM ends it through process.exit.
'use strict';
const http = require('http');

const mode = process.argv[2] || 'compute';
const backendPort = Number(process.argv[3] || 0);
const iters = Number(process.env.WORK_ITERS || 2000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function work() {
  let h = 0;
  for (let i = 0; i < iters; i++) h = (Math.imul(h, 31) + i) | 0;
  return h;
}

function answer(res, text) {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function call(req, res, h) {
  http.get({ host: '127.0.0.1', port: backendPort, path: '/b' + req.url, agent }, (r) => {
    let n = 0;
    r.on('data', (c) => { n += c.length; });
    r.on('end', () => answer(res, `ok ${h} ${r.statusCode} ${n}\n`));
  }).on('error', (e) => {
    res.writeHead(502, { 'Content-Type': 'text/plain' });
    res.end(`back-end failed: ${e.message}\n`);
  });
}

const handlers = {
  compute: (req, res) => answer(res, `ok ${work()}\n`),
  // the call made synchronously in the handler
  call: (req, res) => call(req, res, work()),
  // the call made after an await (the shape of most async handlers): its context must be propagated
  callawait: async (req, res) => {
    const h = work();
    await null;
    call(req, res, h);
  },
};
if (!handlers[mode]) throw new Error(`unknown mode ${mode}`);
const server = http.createServer(handlers[mode]);
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(`node_hints listening on http port ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
