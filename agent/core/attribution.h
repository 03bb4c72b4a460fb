// Which transaction a step belongs to. The rules (docs/agent.md, "Which request a step belongs to"):
//
//  1. process mode: the process's one transaction;
//  2. a captured context attached to this thread (C API hand-off, a runtime's executor hint);
//  3. a request a runtime hint entered on this thread (`E`), while that request is in flight;
//  4. thread-per-request threads (never two requests of their own in flight at once): the request the
//     thread read last, as long as it is in flight;
//  5. event-loop threads (began reading a request while another of theirs was in flight; sticky), when
//     no runtime gives hints on them: the "handler window" — the request whose bytes were the last thing
//     the thread read, if it made no event-wait call (epoll_wait, poll, select…) and read no other
//     socket since;
//  6. otherwise nobody: the step goes to the process's unattributed container (unattributed.h), never
//     to a request that did not make it.
// Outbound connections add one rule (http_out.cpp): the first request written on a connection belongs
// to the request that was handled when its connect() was issued, or that an `O` hint named.
//
// A request is named by a ReqRef — its inbound connection's descriptor and its txid — and found again
// through the connection (sock::request_on below), so nothing here holds a pointer to a transaction
// that may have ended.
#pragma once

#include <cstdint>

#include "core/transaction.h"

namespace txray {

struct ReqRef {
  int32_t fd = -1;
  uint64_t txid = 0;  // 0: whichever request is in flight on fd
  bool valid() const { return fd >= 0; }
};

namespace sock {
// The request in flight on inbound connection fd, if it is its n-th (n = 0: any), has this txid (0: any)
// and the calling thread may record into it (it began there, or it was captured); else nullptr. Does
// not wait for a thread working on the connection (nullptr then). Declared here because the rules
// need it; defined by the dispatch (protocols/dispatch/socket_events.cpp), which holds the inbound
// connections — so core/ names no protocol.
Transaction* request_on(int fd, uint32_t n, uint64_t txid);
}  // namespace sock

namespace attr {

// The handler window: the inbound connection whose request bytes this thread read last (-1: closed).
extern constinit thread_local int t_window_fd __attribute__((tls_model("initial-exec")));

// An event-wait call (epoll_wait, poll, select…) or a read of another socket: the handler window closes.
inline void close_window() { t_window_fd = -1; }

// A request began on inbound fd (its head was read on this thread): makes it the thread's request and
// notices event loops.
void request_began(Transaction* t, int fd);

// The name of t as a request (invalid for API/process transactions and the container).
inline ReqRef ref_of(const Transaction* t) {
  return (t && t->req_fd >= 0) ? ReqRef{t->req_fd, t->txid} : ReqRef{};
}

// The transaction the rules above give for the calling thread, or nullptr (= unattributed).
Transaction* current();

// Same, but the unattributed container (created on first use) instead of nullptr in http mode.
Transaction* current_or_container();

// The request r names when it is still in flight and the calling thread may record into it.
Transaction* resolve(const ReqRef& r);

// Whether the calling thread is an event-loop thread or one a runtime gives hints on.
bool event_loop();

// Runtime hints on this thread (hint_protocol.h).
void set_hinted();             // a runtime gives hints here: no handler-window guessing
void enter(const ReqRef& r);   // steps of this thread belong to r until leave()
void leave();

// Hand-off of a transaction to other threads. capture() is called on a thread where t is current (it
// marks t as used from several threads, so its lock is taken from then on) and holds t until release();
// attach()/detach() make it the calling thread's (rule 2). Handles are checked: a stale or made-up one
// attaches nothing. Returns 0 / false on failure.
uint64_t capture(Transaction* t);
bool attach(uint64_t handle);
void detach();
uint64_t attached();
void release(uint64_t handle);

// In a forked child: the parent's requests, windows and captures are not the child's.
void after_fork_child();

}  // namespace attr

}  // namespace txray
