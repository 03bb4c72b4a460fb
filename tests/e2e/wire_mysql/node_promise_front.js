// mysql2's promise API in a Node.js http server, and a single connection that every request shares:
// GET /pq/<id> await pool.query, GET /px/<id> await pool.execute (a prepared statement), GET /pc/<id>
// await pool.getConnection() then conn.execute and release (a pool of 3 connections for 8 clients: most
// callers wait for one another's release), GET /one/<id> conn.query on one connection made with the
// callback API (every command queued behind the others and written from the previous reply's callback),
// GET /chain/<id> a query issued from the callback of another (SELECT CONNECTION_ID() first) on a
// callback-API pool.
const http = require('http');
const mysql = require(process.argv[4] + '/mysql2/promise');
const callbacks = require(process.argv[4] + '/mysql2');
const opts = {host: '127.0.0.1', port: +process.argv[3], user: 'root', database: 'txray'};
const pool = mysql.createPool({...opts, connectionLimit: 3});
const one = callbacks.createConnection(opts);
const cbpool = callbacks.createPool({...opts, connectionLimit: 2});
const SQL = 'SELECT name FROM people WHERE id = ?';
http.createServer(async (req, res) => {
  const [, kind, rid] = req.url.split('/');
  let body;
  try {
    let rows;
    if (kind === 'pq') [rows] = await pool.query(SQL, [+rid]);
    else if (kind === 'px') [rows] = await pool.execute(SQL, [+rid]);
    else if (kind === 'pc') {
      const conn = await pool.getConnection();
      try {
        [rows] = await conn.execute(SQL, [+rid]);
      } finally {
        conn.release();
      }
    } else if (kind === 'one') {
      rows = await new Promise((resolve, reject) => one.query(SQL, [+rid], (e, r) => (e ? reject(e) : resolve(r))));
    } else {
      rows = await new Promise((resolve, reject) => cbpool.query('SELECT CONNECTION_ID() AS c', (e) => {
        if (e) reject(e);
        else cbpool.query(SQL, [+rid], (e2, r) => (e2 ? reject(e2) : resolve(r)));
      }));
    }
    body = `${rid} ${rows[0].name}`;
  } catch (e) {
    body = `${rid} error ${e.errno}`;
  }
  res.writeHead(200, {'Content-Length': Buffer.byteLength(body)});
  res.end(body);
}).listen(+process.argv[2], '127.0.0.1');
