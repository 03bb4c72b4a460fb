// For bench/node_hints (MODES="... als"): what the hint shim does per request besides the hints — a
// diagnostics_channel subscriber that enters an AsyncLocalStorage store — in node alone, no agent.
'use strict';
const dc = require('diagnostics_channel');
const { AsyncLocalStorage } = require('async_hooks');

const als = new AsyncLocalStorage();
const listener = () => als.enterWith({ fd: -1, token: '0000000000000000' });
dc.channel('http.server.request.start').subscribe(listener);
module.exports = { listener };  // referenced: Node 18 held channel subscribers weakly
