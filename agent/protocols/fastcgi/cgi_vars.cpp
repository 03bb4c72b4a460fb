#include "protocols/fastcgi/cgi_vars.h"

#include "core/redact.h"
#include "core/transaction.h"
#include "protocols/tracecontext/context.h"

namespace txray {
namespace {

void put_attr(Transaction* tx, std::string_view key, std::string_view value) {
  Attr& a = tx->attrs.emplace_back();
  a.key.assign(key);
  a.value.assign(value);
}

constexpr std::string_view kWanted[] = {"REQUEST_METHOD",  "REQUEST_URI",     "SCRIPT_NAME",     "PATH_INFO",
                                        "QUERY_STRING",    "HTTP_HOST",       "HTTP_USER_AGENT", "HTTP_TRACEPARENT",
                                        "HTTP_TRACESTATE", "HTTP_BAGGAGE",    "CONTENT_LENGTH"};

}  // namespace

void CgiVars::clear() {
  for (std::string* f : {&method, &uri, &script, &path_info, &query, &host, &user_agent, &traceparent, &tracestate,
                         &baggage})
    f->clear();
  content_length = 0;
  traceparents = 0;
  tracestate_seen = baggage_seen = false;
}

bool CgiVars::wanted(std::string_view name) {
  for (std::string_view w : kWanted)
    if (name == w) return true;
  return false;
}

void CgiVars::take(std::string_view name, std::string_view value, bool truncated) {
  if (name == "REQUEST_METHOD") method.assign(value.substr(0, 32));
  else if (name == "REQUEST_URI") uri.assign(value.substr(0, 2048));
  else if (name == "SCRIPT_NAME") script.assign(value.substr(0, 2048));
  else if (name == "PATH_INFO") path_info.assign(value.substr(0, 2048));
  else if (name == "QUERY_STRING") query.assign(value.substr(0, 1024));
  else if (name == "HTTP_HOST") host.assign(value.substr(0, 256));
  else if (name == "HTTP_USER_AGENT") user_agent.assign(value.substr(0, 512));
  else if (name == "HTTP_TRACEPARENT") {
    // The first one: a traced front's agent puts its call's context before the params the front
    // passes on from its own client (fastcgi_client.h), and that call is the nearer caller.
    if (traceparents++ == 0 && !truncated) traceparent.assign(value.substr(0, 128));
  } else if (name == "HTTP_TRACESTATE") {
    if (!tracestate_seen && !truncated) tracestate.assign(value);
    tracestate_seen = true;
  } else if (name == "HTTP_BAGGAGE") {
    if (!baggage_seen && !truncated) baggage.assign(value);
    baggage_seen = true;
  } else if (name == "CONTENT_LENGTH") {
    uint64_t v = 0;
    size_t i = 0;
    for (; i < value.size() && i < 19 && value[i] >= '0' && value[i] <= '9'; ++i) v = v * 10 + uint64_t(value[i] - '0');
    content_length = (i == value.size()) ? v : 0;
  }
}

std::string CgiVars::name() const {
  std::string_view u = uri;
  if (size_t q = u.find('?'); q != std::string_view::npos) u = u.substr(0, q);
  std::string path;
  if (!u.empty()) {
    path.assign(u);
  } else {
    path.assign(script);
    path.append(path_info);
  }
  const redact::Policy& policy = redact::policy();
  std::string out;
  out.assign(method.empty() ? std::string_view("?") : std::string_view(method));
  out.push_back(' ');
  if (redact::masks_paths(policy)) redact::append_path(policy, path, out);
  else out.append(path);
  if (out.size() > 1024) out.resize(1024);
  return out;
}

void CgiVars::apply(Transaction* tx) const {
  if (!tx) return;
  tx->name = name();
  std::string_view q = query;
  if (q.empty()) {
    std::string_view u = uri;
    if (size_t at = u.find('?'); at != std::string_view::npos) q = u.substr(at + 1);
  }
  const redact::Policy& policy = redact::policy();
  if (!q.empty()) {  // values masked unless kept by name or raw, as HTTP's
    Attr& a = tx->attrs.emplace_back();
    a.key.assign("query");
    redact::append_query(policy, q.substr(0, 1024), a.value);
  }
  if (!host.empty()) put_attr(tx, "host", host);
  if (!user_agent.empty()) put_attr(tx, "user_agent", user_agent);
  if (traceparents || !baggage.empty()) {
    // A CGI variable holds one header, its lines joined with ", " (which tracestate and baggage allow).
    std::string_view ts[1] = {tracestate};
    std::string_view bg[1] = {baggage};
    InboundContext in;
    in.traceparent = traceparent;
    in.traceparents = traceparent.empty() ? 0 : 1;
    in.tracestate = ts;
    in.tracestates = tracestate.empty() ? 0 : 1;
    in.baggage = bg;
    in.baggages = baggage.empty() ? 0 : 1;
    accept_context(tx, in);
  }
}

}  // namespace txray
