// mysql2 (pure JavaScript) in a Node.js http server with a pool of 4 connections: GET /q/<id> is
// pool.query (text protocol, the value escaped into the text), GET /x/<id> pool.execute (a prepared
// statement, the value a binary bind), GET /bad/<id> a missing table.
const http = require('http');
const mysql = require(process.argv[4] + '/mysql2');
const pool = mysql.createPool({host: '127.0.0.1', port: +process.argv[3], user: 'root', database: 'txray',
                               connectionLimit: 4});
http.createServer((req, res) => {
  const [, kind, rid] = req.url.split('/');
  const done = (e, rows) => {
    const body = e ? `${rid} error ${e.errno}` : `${rid} ${rows[0].name}`;
    res.writeHead(200, {'Content-Length': Buffer.byteLength(body)});
    res.end(body);
  };
  if (kind === 'q') pool.query('SELECT name FROM people WHERE id = ?', [+rid], done);
  else if (kind === 'x') pool.execute('SELECT name FROM people WHERE id = ?', [+rid], done);
  else pool.execute('SELECT name FROM missing_table WHERE id = ?', [+rid], done);
}).listen(+process.argv[2], '127.0.0.1');
