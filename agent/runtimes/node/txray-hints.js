'use strict';
// txray runtime shim for Node.js (>= 18): tells the preloaded agent which inbound request each outbound
// HTTP call belongs to, so calls made on the one event-loop thread land in the right transaction.
// Loaded with `node --require <this file>` (`txray run` puts it in NODE_OPTIONS). No dependencies.
// docs/agent.md ("Node.js") says how it finds a call's request and what each way costs.
//
// It speaks the hint protocol of docs/agent.md ("Runtimes"): a 32-byte buffer written with libc write()
// to the reserved descriptor 2147483600, which the agent's write hook takes without a system call and
// answers in place. Without the agent the kernel answers EBADF and the shim switches itself off for good.
//   - at load:                     Hnode
//   - each inbound request start:  {fd, n} kept in the request's async context (n = the request's number
//                                  on its connection, 1-based); R<fd>:<n> asks for its token at its first
//                                  outbound call
//   - at load, too:                B<slots>:<list> with the hint board as the buffer (agent/hints/hint_board.h):
//                                  a table in this file's memory, a slot per outbound descriptor, where the
//                                  shim names a call's request with two stores instead of a hint, then an
//                                  owner list (one owner per command of a pipelined write); U at exit
//   - each outbound request:       slot outfd = {fd, n} right before its head is written on outfd (the
//                                  agent reads it at that write); for a descriptor past the board's end,
//                                  R<fd>:<n> for the token, then O<outfd>:<fd>:<token>
//     http/https ClientRequest: in its 'socket' event (the head is flushed right after it), or at the
//       socket's 'connect' when the socket is still connecting (the write waits for 'connect' too, and
//       our listener was added first); the token is taken when the request is created, since a queued
//       request of a keep-alive pool gets its socket in another request's callback
//     global fetch (undici): token at undici:request:create (the caller's async context), hint at
//       undici:client:sendHeaders, which undici publishes just before it writes the head
//     other client sockets (database drivers): the caller's context at each net.Socket write
//     mysql2: the caller's context when a command is queued (addCommand; a pool's getConnection
//       callback runs in its caller's), named at the connection's writes while that command is current
//     node-redis: the caller's context when a command is queued, listed per command in the board's owner
//       list as the commands of one pipelined write are handed to the socket
// Nothing it does may ever throw into the program: every entry point catches, and an unexpected error
// switches the shim off.

const HINT_FD = 2147483600;
const NO_TOKEN = '0000000000000000';

const state = { active: false, sent: 0, board: null, propagating: () => false };
module.exports = {
  active: () => state.active,
  hintsSent: () => state.sent,
  board: () => state.board !== null,
  propagating: () => state.propagating(),  // AsyncLocalStorage carries requests' contexts now
};

function install() {
  if (process.env.TXRAY_RUNTIME_HINTS === '0') return;
  const writeSync = require('fs').writeSync;  // taken now: later patches of fs by the program don't matter
  const dc = require('diagnostics_channel');
  const { AsyncLocalStorage, executionAsyncResource } = require('async_hooks');
  const http = require('http');

  const buf = Buffer.alloc(32);
  const subscriptions = [];  // [channel object, listener]: kept referenced (Node 18 held channels weakly)
  const restores = [];
  const BOARD_SLOTS = 16384;
  const LIST_CAP = 128;  // the agent's Redis client keeps as many
  let slots = null;  // the hint board's slots once the agent took it
  let list = null;   // its owner list: [outfd, count, first, 0, then {fd, n} per command]

  function off() {
    if (!state.active) return;
    if (slots !== null) {
      slots = null;
      list = null;
      try {
        buf[buf.write('U', 0, 31, 'latin1')] = 0;
        writeSync(HINT_FD, buf, 0, 32);
      } catch { /* the agent is gone */ }
    }
    state.active = false;
    for (const [ch, fn] of subscriptions) {
      try { ch.unsubscribe(fn); } catch { /* nothing to undo */ }
    }
    for (const undo of restores) {
      try { undo(); } catch { /* nothing to undo */ }
    }
  }

  // The message up to the first NUL is all the agent reads: no need to clear the rest. latin1Write and
  // latin1Slice (Buffer methods since Node 0.x) cost half of write()/toString() with an encoding.
  const put = typeof buf.latin1Write === 'function'
    ? (msg) => { buf[buf.latin1Write(msg, 0, 31)] = 0; }
    : (msg) => { buf[buf.write(msg, 0, 31, 'latin1')] = 0; };
  const token = typeof buf.latin1Slice === 'function'
    ? () => (buf[16] === 0 ? buf.latin1Slice(0, 16) : null)
    : () => (buf[16] === 0 ? buf.toString('latin1', 0, 16) : null);

  // One hint: true when the agent took it (the reply is in buf); false when it refused it (EINVAL) or
  // there is no agent (EBADF: the shim switches off).
  function hint(msg) {
    if (!state.active) return false;
    put(msg);
    try {
      writeSync(HINT_FD, buf, 0, 32);
    } catch (e) {
      if (!(e && e.code === 'EINVAL')) off();  // EBADF: no agent in this process
      return false;
    }
    state.sent++;
    return true;
  }

  // The descriptor of a net.Socket (TLS: of the TCP handle under it), or -1.
  function fdOf(socket) {
    const h = socket && socket._handle;
    if (!h) return -1;
    if (typeof h.fd === 'number' && h.fd >= 0) return h.fd;
    const p = h._parent;
    return p && typeof p.fd === 'number' && p.fd >= 0 ? p.fd : -1;
  }

  function guarded(fn) {
    return function (arg) {
      if (!state.active) return;
      try {
        fn.call(this, arg);
      } catch {
        off();
      }
    };
  }

  function subscribe(name, fn) {
    const ch = dc.channel(name);
    ch.subscribe(fn);
    subscriptions.push([ch, fn]);
  }

  state.active = true;
  if (!hint('Hnode')) {
    off();
    return;
  }

  // The hint board (agent/hints/hint_board.h): its memory is kept referenced for the life of the realm,
  // and withdrawn ('U') at 'exit', before Node frees it.
  // After the slots, the owner list (LIST_CAP entries): the owners of the commands of one pipelined
  // write, in order (node-redis, below).
  const board = Buffer.alloc(32 + BOARD_SLOTS * 8 + 16 + LIST_CAP * 8);
  board[board.write('B' + BOARD_SLOTS + ':' + LIST_CAP, 0, 31, 'latin1')] = 0;
  try {
    writeSync(HINT_FD, board, 0, board.length);
    if (board.toString('latin1', 0, 2) === 'OK') {
      slots = new Int32Array(board.buffer, board.byteOffset + 32, BOARD_SLOTS * 2);
      list = new Int32Array(board.buffer, board.byteOffset + 32 + BOARD_SLOTS * 8, 4 + LIST_CAP * 2);
      state.board = board;
      process.on('exit', () => {
        slots = null;
        list = null;
        hint('U');
      });
    }
  } catch { /* no board: O hints */ }

  // Kept beside Node's objects, never on them: a property added to a socket or a request after Node
  // built it changes its hidden class and can turn Node's own property accesses in http megamorphic.
  const requestOn = new WeakMap();   // inbound socket -> the context of the latest request started on it
  const contextOf = new WeakMap();   // undici request -> context

  // Which request a call is made for: its context {fd, n, token} — fd the inbound connection, n the
  // request's number on it. Three ways, cheapest first:
  // 1. a call made synchronously in its handler runs in the connection's own async resource (Node's
  //    HTTPServerAsyncResource, whose `socket` is the connection; its prototype is learnt at the first
  //    request): the latest request started on that socket;
  // 2. a call made in a promise continuation (after an `await`): the context the promise was created
  //    in, carried by V8's own promise hooks (v8.promiseHooks: a plain function call per promise event);
  // 3. anything else (a timer, another call's callback, a stream event): AsyncLocalStorage, entered at
  //    each request's start, whose hook on every async resource (promises included, through Node's
  //    async_hooks machinery) is most of what the shim costs.
  // 3 (and 2) run from the start. Once PROOF calls were found by 1 or 2, or requests finished, while no
  // call needed 3, AsyncLocalStorage stops (and the promise hooks too if no call needed them). The first
  // call only AsyncLocalStorage could have found after that starts it again for good: that call, and the
  // later calls of requests that started while it was off, go to the unattributed steps (the agent never
  // guesses on a thread that gives hints) — never to another request. A stale context (its request over, or the next one on the same
  // connection started) is caught by the agent, which checks n.
  const PROOF = 256;
  const als = new AsyncLocalStorage();
  let alsOn = true;          // requests enter their context at start
  let alsPinned = false;     // a call only AsyncLocalStorage could find: it stays on
  let proven = 0;            // calls found without AsyncLocalStorage, and requests finished
  let promisesUsed = false;  // a call was found through the promise hooks
  let serverResource = null; // the prototype of Node's HTTPServerAsyncResource
  let forced = null;         // while a callback bound to its caller's context runs: that context
  state.propagating = () => alsOn;

  // The context of the request whose handler runs now (way 1), or null.
  function handlerContext() {
    const r = executionAsyncResource();
    if (serverResource === null || r === null || typeof r !== 'object' || Object.getPrototypeOf(r) !== serverResource)
      return null;
    const c = requestOn.get(r.socket);
    return c === undefined ? null : c;
  }

  // Way 2: the context of the promise continuation running now (promiseDepth > 0), from the context its
  // promise was created in. Every hook catches: nothing may throw into V8's promise machinery.
  const promiseHooks = (() => {
    try {
      return require('v8').promiseHooks;
    } catch {
      return undefined;
    }
  })();
  const kContext = Symbol('txray.request');
  let promiseDepth = 0;
  let promiseContext = null;
  const promiseStack = [];
  let stopPromiseHooks = null;
  if (promiseHooks && typeof promiseHooks.createHook === 'function') {
    try {
      stopPromiseHooks = promiseHooks.createHook({
        init(promise) {
          try {
            const c = promiseDepth > 0 ? promiseContext : handlerContext();
            if (c !== null) promise[kContext] = c;
          } catch { /* no context for this promise */ }
        },
        before(promise) {
          promiseStack.push(promiseContext);
          promiseDepth++;
          const c = promise[kContext];
          promiseContext = c === undefined ? null : c;
        },
        after() {
          if (promiseDepth > 0) {
            promiseDepth--;
            promiseContext = promiseStack.pop();
          }
        },
      });
    } catch {
      stopPromiseHooks = null;
    }
  }
  restores.push(() => { if (stopPromiseHooks) stopPromiseHooks(); stopPromiseHooks = null; });

  subscribe('http.server.request.start', guarded(({ request, socket }) => {
    const s = socket || request.socket;
    const prev = requestOn.get(s);
    const fd = fdOf(s);
    const ctx = fd >= 0 ? { fd, n: prev === undefined ? 1 : prev.n + 1, token: undefined } : null;
    if (ctx !== null) requestOn.set(s, ctx);
    else requestOn.delete(s);
    if (serverResource === null) {
      const r = executionAsyncResource();
      if (r !== null && typeof r === 'object' && r.socket === s) serverResource = Object.getPrototypeOf(r);
    }
    if (alsOn) als.enterWith(ctx);
  }));

  // One more piece of evidence that AsyncLocalStorage is not needed: a call found without it, or a
  // request that finished while no call ever needed it.
  function proof() {
    if (!alsOn || alsPinned || ++proven < PROOF) return;
    alsOn = false;
    als.disable();
    if (!promisesUsed && stopPromiseHooks !== null) {
      stopPromiseHooks();
      stopPromiseHooks = null;
    }
    try { finished.unsubscribe(onFinish); } catch { /* stays subscribed: proof() returns at once */ }
  }
  const finished = dc.channel('http.server.response.finish');
  const onFinish = guarded(() => proof());
  finished.subscribe(onFinish);
  subscriptions.push([finished, onFinish]);

  // The context of the request a call made now belongs to, or null.
  function callContext() {
    if (forced !== null) return forced;
    const inPromise = stopPromiseHooks !== null && promiseDepth > 0;
    const ctx = inPromise ? promiseContext : handlerContext();
    if (ctx !== null) {
      if (inPromise) promisesUsed = true;
      proof();
      return ctx;
    }
    alsPinned = true;
    if (!alsOn) {
      alsOn = true;  // from the next request on
      return null;
    }
    return als.getStore() || null;
  }

  // The request's token ('' when the agent follows no such request).
  function tokenOf(ctx) {
    if (ctx.token === undefined) {
      ctx.token = '';
      if (hint('R' + ctx.fd + ':' + ctx.n)) {
        const t = token();
        if (t !== null && t !== NO_TOKEN) ctx.token = t;
      }
    }
    return ctx.token;
  }

  function sendOutbound(socket, ctx) {
    const outfd = fdOf(socket);
    if (outfd < 0) return;
    if (slots !== null && outfd < BOARD_SLOTS) {
      slots[2 * outfd] = ctx.fd;
      slots[2 * outfd + 1] = ctx.n;
      return;
    }
    const t = tokenOf(ctx);
    if (t) hint('O' + outfd + ':' + ctx.fd + ':' + t);
  }

  function clientSocket(socket, ctx) {
    if (socket.connecting || fdOf(socket) < 0) {
      socket.once('connect', guarded(function () { sendOutbound(this, ctx); }));  // a new socket: rare
    } else {
      sendOutbound(socket, ctx);
    }
  }

  // http/https ClientRequest: the caller's context, taken when the request is created and kept in the
  // listener's closure — not in a WeakMap (a new ephemeron entry per request made V8 grow, rehash and
  // scan its table) nor on the request (a property added after construction changes its hidden class).
  // on(), not once(): removing the listener after it ran would `delete` a key of the request's _events
  // object, turning it into a dictionary for every later emit of the request.
  function track(req) {
    if (!state.active) return;
    const ctx = callContext();
    if (!ctx) return;
    let done = false;
    req.on('socket', guarded((socket) => {
      if (done) return;  // 'socket' again (a retry): the first socket's request was hinted already
      done = true;
      clientSocket(socket, ctx);
    }));
  }
  function wrap(proto, name, make) {
    const orig = proto[name];
    if (typeof orig !== 'function') return;
    proto[name] = make(orig);
    restores.push(() => { proto[name] = orig; });
  }
  // Every request with an agent (the default, keep-alive pools, `agent: false`) passes through
  // addRequest from its constructor; one without (createConnection option) through onSocket.
  wrap(http.Agent.prototype, 'addRequest', (orig) => function addRequest(req) {
    try { track(req); } catch { off(); }
    return orig.apply(this, arguments);
  });
  wrap(http.ClientRequest.prototype, 'onSocket', (orig) => function onSocket() {
    try { if (!this.agent) track(this); } catch { off(); }
    return orig.apply(this, arguments);
  });

  // Any other client socket (a database driver speaking its wire protocol itself: pg, mysql2, redis…):
  // the caller's context at each write, which the agent reads at the write's system call. A driver
  // writes a statement from the code that issued it (in its promise chain or callback), so that context
  // is the statement's request; a statement a driver queued and writes later from another one's reply
  // callback gets the context of that callback, which the agent checks (n) and, when it is not a live
  // request, takes as nobody's. Sockets of HTTP (server connections, http/https requests: named above)
  // are left alone, cheaply: an accepted socket has `server`, an HTTP one `_httpMessage` or `parser`.
  const net = require('net');
  wrap(net.Socket.prototype, 'write', (orig) => function write() {
    try {
      if (this.server == null && this._httpMessage == null && this.parser == null && state.active) {
        // node-redis hands its commands over one by one (their owners listed as they come, below);
        // a socket it writes otherwise is left to the rules here for good.
        if (redisOwners.length > 0) {
          listOwners(this);
          return orig.apply(this, arguments);
        }
        if (redisWriting > 0) return orig.apply(this, arguments);  // the rest of a listed command
        if (redisLoaded) {
          const st = redisSeq.get(this);
          if (st === undefined) redisSeq.set(this, { seq: 0, bad: true });  // its commands uncounted
          else st.bad = true;
        }
        // A slot already set names this write (undici's sendHeaders, just before its head): it stays.
        const fd = fdOf(this);
        if (fd >= 0 && (slots === null || fd >= BOARD_SLOTS || slots[2 * fd + 1] === 0)) {
          const ctx = callContext();
          if (ctx) sendOutbound(this, ctx);
        }
      }
    } catch { off(); }
    return orig.apply(this, arguments);
  });

  // Drivers that queue commands per connection (mysql2): a command queued behind another is written
  // from the socket's 'data' callback when the previous reply ends, and a pool hands a waiting caller
  // its connection from the callback of the request that released it — neither is the caller's
  // context. So the context is taken when the caller hands the command over, kept with the command,
  // and written in the board slot by the connection's own write while that command is current.
  // The driver's classes are found when its package is loaded (Module._load is wrapped: two property
  // reads per require), by their shape rather than their path, so that any copy of it is found.
  const NOBODY = { fd: -1, n: -1, token: '' };  // a slot's "nobody's": the write is made for no request
  const patched = new WeakSet();
  const commandContext = new WeakMap();  // a mysql2 command -> the context of the call that queued it

  // The callback runs in ctx, whatever context calls it (a pool's queue, another request's release).
  function bound(ctx, fn) {
    return function () {
      const prev = forced;
      forced = ctx;
      try {
        return fn.apply(this, arguments);
      } finally {
        forced = prev;
      }
    };
  }

  // The prototype on proto's chain that defines name itself, or null.
  function ownerOf(proto, name) {
    for (let p = proto; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      if (Object.prototype.hasOwnProperty.call(p, name)) return p;
    }
    return null;
  }
  // obj's own data property name when it is a function (no getter is ever run), else undefined.
  function ownFunction(obj, name) {
    const d = Object.getOwnPropertyDescriptor(obj, name);
    return d !== undefined && typeof d.value === 'function' ? d.value : undefined;
  }

  // mysql2's connection (the base class every Connection and PoolConnection shares): addCommand is
  // called by the code that issued the command (query, execute, prepare, ping, the handshake), write
  // for every packet, with the command being executed in _command. The command's callback (onResult)
  // runs in its caller's context too: mysql2 calls it from the socket's 'data' callback, whose context
  // is that of the request that made the connection, and a query issued from it is the caller's.
  function patchMysql2Connection(C) {
    const p = ownerOf(C.prototype, 'addCommand');
    if (p === null || patched.has(p) || typeof p.write !== 'function' || typeof p.handlePacket !== 'function') return;
    patched.add(p);
    wrap(p, 'addCommand', (orig) => function addCommand(cmd) {
      try {
        if (state.active && cmd !== null && typeof cmd === 'object') {
          const ctx = callContext();
          commandContext.set(cmd, ctx === null ? NOBODY : ctx);
          if (ctx !== null && typeof cmd.onResult === 'function') cmd.onResult = bound(ctx, cmd.onResult);
        }
      } catch { off(); }
      return orig.apply(this, arguments);
    });
    wrap(p, 'write', (orig) => function write() {
      try {
        const cmd = this._command;
        if (state.active && cmd != null) {
          const ctx = commandContext.get(cmd);
          if (ctx !== undefined && this.stream) sendOutbound(this.stream, ctx);
        }
      } catch { off(); }
      return orig.apply(this, arguments);
    });
  }

  // mysql2's pool: getConnection's callback (pool.query's and pool.execute's too) runs in its caller's
  // context, so that the command it queues is the caller's.
  function patchMysql2Pool(P) {
    const p = ownerOf(P.prototype, 'getConnection');
    if (p === null || patched.has(p) || typeof p.releaseConnection !== 'function') return;
    patched.add(p);
    wrap(p, 'getConnection', (orig) => function getConnection(cb) {
      try {
        if (state.active && typeof cb === 'function') {
          const ctx = callContext();
          if (ctx !== null) arguments[0] = bound(ctx, cb);
        }
      } catch { off(); }
      return orig.apply(this, arguments);
    });
  }

  // node-redis (@redis/client) auto-pipelines: every command issued in one tick, by any number of
  // requests, is queued (RedisCommandsQueue.addCommand, in its caller's context) and written from a
  // setImmediate in one corked write (commandsToWrite() yields each command's chunks, which go to
  // socket.write one by one). So each command's owner is taken when it is queued, kept with the queue's
  // entry (the value its DoublyLinkedList's add() is given inside addCommand), picked up when the
  // generator shifts that entry, and listed in the board's owner list at the command's first
  // socket.write, numbered from the socket's first command; the agent's Redis client takes one per
  // command. A write on that socket made otherwise stops the lists for it (the numbers would drift).
  let redisLoaded = false;
  let redisAdding = null;     // inside addCommand: the caller's context (NOBODY outside any request)
  let redisShifting = false;  // inside the generator's next(): the entry it shifts is the one it yields
  let redisShifted = null;
  let redisWriting = 0;       // generators being iterated
  const redisOwners = [];     // owners of the commands yielded but not yet handed to a socket
  const redisSeq = new WeakMap();  // socket -> {seq: commands handed to it, bad}
  const redisContext = new WeakMap();  // a queue entry -> its caller's context

  function listOwners(socket) {
    const fd = fdOf(socket);
    let st = redisSeq.get(socket);
    if (st === undefined) {
      st = { seq: 0, bad: false };
      redisSeq.set(socket, st);
    }
    const first = st.seq;
    st.seq += redisOwners.length;
    if (fd < 0 || st.bad || list === null) {
      redisOwners.length = 0;
      return;
    }
    let count = list[1];
    if (!(count > 0 && list[0] === fd && list[2] + count === first)) {
      count = 0;  // the list the agent has not taken is another socket's (or it was taken): a new one
      list[0] = fd;
      list[2] = first;
    }
    for (let i = 0; i < redisOwners.length && count < LIST_CAP; i++, count++) {
      const ctx = redisOwners[i];
      list[4 + 2 * count] = ctx === null ? 0 : ctx.fd;
      list[5 + 2 * count] = ctx === null ? 0 : ctx.n;
    }
    list[1] = count;
    redisOwners.length = 0;
  }

  function* redisCommands(it) {
    redisWriting++;
    try {
      for (;;) {
        redisShifted = null;
        redisShifting = true;
        let r;
        try {
          r = it.next();
        } finally {
          redisShifting = false;
        }
        if (r.done) return r.value;
        const ctx = redisShifted === null ? undefined : redisContext.get(redisShifted);
        redisOwners.push(ctx === undefined ? null : ctx);
        yield r.value;
      }
    } finally {
      redisWriting--;
      redisOwners.length = 0;  // yielded but never written (the socket's write threw)
      try { it.return(); } catch { /* the driver's own generator: nothing of ours to undo */ }
    }
  }

  function patchRedisQueue(Q) {
    const p = ownerOf(Q.prototype, 'addCommand');
    if (p === null || patched.has(p) || typeof p.commandsToWrite !== 'function') return;
    patched.add(p);
    redisLoaded = true;
    wrap(p, 'addCommand', (orig) => function addCommand() {
      const prev = redisAdding;
      try {
        if (state.active && list !== null) {
          const ctx = callContext();
          redisAdding = ctx === null ? NOBODY : ctx;
        }
      } catch { off(); }
      try {
        return orig.apply(this, arguments);
      } finally {
        redisAdding = prev;
      }
    });
    wrap(p, 'commandsToWrite', (orig) => function commandsToWrite() {
      const it = orig.apply(this, arguments);
      return state.active && list !== null ? redisCommands(it) : it;
    });
  }

  function patchRedisList(L) {
    const p = L.prototype;
    if (patched.has(p) || typeof p.add !== 'function' || typeof p.shift !== 'function') return;
    patched.add(p);
    wrap(p, 'add', (orig) => function add(value) {
      const r = orig.apply(this, arguments);
      if (redisAdding !== null && value !== null && typeof value === 'object') {
        try { redisContext.set(value, redisAdding); } catch { off(); }
      }
      return r;
    });
    wrap(p, 'shift', (orig) => function shift() {
      const v = orig.apply(this, arguments);
      if (redisShifting && v !== undefined) redisShifted = v;
      return v;
    });
  }

  function patchDrivers() {
    const Module = require('module');
    wrap(Module, '_load', (orig) => function _load() {
      const exports = orig.apply(this, arguments);
      try {
        if (state.active && exports !== null && (typeof exports === 'object' || typeof exports === 'function')) {
          const C = ownFunction(exports, 'Connection');
          if (C !== undefined && ownFunction(exports, 'createPool') !== undefined) {  // mysql2's entry
            patchMysql2Connection(C);
            const P = ownFunction(exports, 'Pool');
            if (P !== undefined) patchMysql2Pool(P);
          }
          // @redis/client's lib/client/commands-queue and lib/client/linked-list
          const Q = ownFunction(exports, 'default');
          if (Q !== undefined && Q.prototype && ownFunction(Q.prototype, 'addCommand') !== undefined &&
              ownFunction(Q.prototype, 'commandsToWrite') !== undefined)
            patchRedisQueue(Q);
          const L = ownFunction(exports, 'DoublyLinkedList');
          if (L !== undefined && ownFunction(exports, 'SinglyLinkedList') !== undefined && L.prototype) patchRedisList(L);
        }
      } catch { /* not a driver's exports */ }
      return exports;
    });
  }
  patchDrivers();

  // Global fetch (undici).
  subscribe('undici:request:create', guarded(({ request }) => {
    const ctx = callContext();
    if (ctx) contextOf.set(request, ctx);
  }));
  subscribe('undici:client:sendHeaders', guarded(({ request, socket }) => {
    const ctx = contextOf.get(request);
    if (ctx) sendOutbound(socket, ctx);
  }));
}

try {
  install();
} catch {
  state.active = false;
}
