// The Node.js `http` service of the trace-context conformance tests (service.py says what it does):
//   node service.js PORT DOWNSTREAM_BASE_URL
const http = require('http');
const [port, base] = process.argv.slice(2);
const TRACE = ['traceparent', 'tracestate', 'baggage'];
http.createServer((req, res) => {
  const got = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i].toLowerCase();
    if (TRACE.includes(k)) got.push([k, req.rawHeaders[i + 1]]);
  }
  http.get(base + req.url, { agent: false }, (r) => {
    const chunks = [];
    r.on('data', (c) => chunks.push(c));
    r.on('end', () => {
      const body = JSON.stringify({ got, next: JSON.parse(Buffer.concat(chunks).toString()) });
      res.writeHead(200, { 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
      res.end(body);
    });
  }).on('error', (e) => { res.writeHead(502); res.end(JSON.stringify({ error: String(e) })); });
}).listen(Number(port), '127.0.0.1', () => console.log('listening'));
