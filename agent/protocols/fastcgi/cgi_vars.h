// The CGI variables (RFC 3875 §4.1, and HTTP_* for the request's headers) a gateway protocol carries —
// FastCGI's PARAMS, uwsgi's vars — and what a request's transaction is made of them: its name, `query`,
// `host`, `user_agent` and the caller's W3C trace context. One place, so both protocols name and link
// their requests alike.
//
// Trace context: of several HTTP_TRACEPARENT (HTTP_TRACESTATE, HTTP_BAGGAGE) variables the first counts.
// CGI variables are not headers (a repeated header is invalid in W3C Trace Context, §3.2): a traced
// front's agent puts its call's context before the params the front passes on from its own client
// (nginx's fastcgi_params / uwsgi_params forward every request header), and the front's call is the
// application's nearer caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace txray {

struct Transaction;

struct CgiVars {
  std::string method, uri, script, path_info, query, host, user_agent, traceparent, tracestate, baggage;
  uint64_t content_length = 0;
  uint32_t traceparents = 0;  // HTTP_TRACEPARENT variables seen; the first one is kept
  bool tracestate_seen = false, baggage_seen = false;

  void clear();
  // Whether a variable of this name is one of the above (asked before its value is kept).
  static bool wanted(std::string_view name);
  // Takes one variable (truncated: its value was longer than what the reader kept).
  void take(std::string_view name, std::string_view value, bool truncated);
  // The transaction's name: "REQUEST_METHOD path", path = REQUEST_URI without its query, else
  // SCRIPT_NAME + PATH_INFO (TXRAY_MASK_PATH templates applied, core/redact.h).
  std::string name() const;
  // Names tx and gives it the attributes and the trace context (tx just begun, or begun with a
  // provisional name and no steps yet).
  void apply(Transaction* tx) const;
};

}  // namespace txray
