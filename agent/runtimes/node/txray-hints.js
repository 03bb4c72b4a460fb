'use strict';
// txray runtime shim for Node.js (>= 18): tells the preloaded agent which inbound request each outbound
// HTTP call belongs to, so calls made on the one event-loop thread land in the right transaction.
// Loaded with `node --require <this file>` (`txray run` puts it in NODE_OPTIONS). No dependencies.
//
// It speaks the hint protocol of docs/agent.md ("Runtimes"): a 32-byte buffer written with libc write()
// to the reserved descriptor 2147483600, which the agent's write hook takes without a system call and
// answers in place. Without the agent the kernel answers EBADF and the shim switches itself off for good.
//   - at load:                     Hnode
//   - each inbound request start:  R<fd>:<n>  (n = the request's number on its connection, 1-based);
//                                  the reply (a token) is kept in the request's async context
//   - each outbound request:       O<outfd>:<fd>:<token> right before its head is written on outfd
//     http/https ClientRequest: in its 'socket' event (the head is flushed right after it), or at the
//       socket's 'connect' when the socket is still connecting (the write waits for 'connect' too, and
//       our listener was added first); the token is taken when the request is created, since a queued
//       request of a keep-alive pool gets its socket in another request's callback
//     global fetch (undici): token at undici:request:create (the caller's async context), hint at
//       undici:client:sendHeaders, which undici publishes just before it writes the head
// Nothing it does may ever throw into the program: every entry point catches, and an unexpected error
// switches the shim off.

const HINT_FD = 2147483600;
const NO_TOKEN = '0000000000000000';

const state = { active: false, sent: 0 };
module.exports = { active: () => state.active, hintsSent: () => state.sent };

function install() {
  if (process.env.TXRAY_RUNTIME_HINTS === '0') return;
  const writeSync = require('fs').writeSync;  // taken now: later patches of fs by the program don't matter
  const dc = require('diagnostics_channel');
  const { AsyncLocalStorage } = require('async_hooks');
  const http = require('http');

  const buf = Buffer.alloc(32);
  const subscriptions = [];  // [channel object, listener]: kept referenced (Node 18 held channels weakly)
  const restores = [];

  function off() {
    if (!state.active) return;
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

  const als = new AsyncLocalStorage();
  const kRequests = Symbol('txray.requests');  // on an inbound socket: requests started on it
  const kContext = Symbol('txray.context');    // on an outbound request: {fd, token} or null

  // Inbound: the request's token, in its async context (null: the agent follows no such request).
  subscribe('http.server.request.start', guarded(({ request, socket }) => {
    const s = socket || request.socket;
    const n = (s[kRequests] = (s[kRequests] || 0) + 1);
    const fd = fdOf(s);
    let ctx = null;
    if (fd >= 0 && hint('R' + fd + ':' + n)) {
      const t = token();
      if (t !== null && t !== NO_TOKEN) ctx = { fd, token: t };
    }
    als.enterWith(ctx);
  }));

  function sendOutbound(socket, ctx) {
    const outfd = fdOf(socket);
    if (outfd >= 0) hint('O' + outfd + ':' + ctx.fd + ':' + ctx.token);
  }

  const onConnect = guarded(function () { sendOutbound(this, this[kContext]); });
  const onClientSocket = guarded(function (socket) {
    const ctx = this[kContext];
    if (!ctx) return;
    if (socket.connecting || fdOf(socket) < 0) {
      socket[kContext] = ctx;
      socket.once('connect', onConnect);
    } else {
      sendOutbound(socket, ctx);
    }
  });

  // http/https ClientRequest: the caller's context, taken when the request is created.
  function track(req) {
    if (!state.active || req[kContext] !== undefined) return;
    const ctx = als.getStore() || null;
    req[kContext] = ctx;
    if (ctx) req.once('socket', onClientSocket);
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

  // Global fetch (undici).
  subscribe('undici:request:create', guarded(({ request }) => {
    const ctx = als.getStore();
    if (ctx) request[kContext] = ctx;
  }));
  subscribe('undici:client:sendHeaders', guarded(({ request, socket }) => {
    const ctx = request[kContext];
    if (ctx) sendOutbound(socket, ctx);
  }));
}

try {
  install();
} catch {
  state.active = false;
}
