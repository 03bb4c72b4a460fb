// libcurl: one HTTP_CALL row per transfer, described by libcurl itself (curl_easy_getinfo): effective
// URL (query values masked), status, bytes, and curl's phase times as attributes dns_us, connect_us,
// tls_us, ttfb_us (microseconds from the start of the transfer, as curl reports them).
//
// - curl_easy_perform: the row is a call step around the whole transfer, so the DNS and SOCKET rows
//   of the transfer nest under it.
// - The multi interface (curl_multi_perform / curl_multi_socket_action, as `curl -Z` uses): transfers
//   overlap, so they cannot nest; each finished transfer adds one row when the program removes its
//   handle (curl_multi_remove_handle), with curl's total time as its elapsed. The transfer's result
//   code comes from curl_multi_info_read; its span id is the one inserted into its request (found by
//   URL, http_out::claim_curl_span), so these calls link to their callees too.
// While any of these runs, the http_call hook family is held: the plain-socket HTTP tracking
// (http_out.cpp) then records no row of its own for curl's bytes (no call is counted twice), and the
// TLS hooks pass curl's SSL_read/SSL_write through.
//
// libcurl is not linked: functions are found at run time (RTLD_NEXT, else the loaded libcurl.so.4).
#include <curl/curl.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "protocols/http1/http_client.h"
#include "protocols/dispatch/http_out.h"
#include "core/recorder.h"
#include "hooks/hook.h"

namespace {

constexpr const char* kLib = "libcurl.so.4";

// Results of finished multi transfers, from curl_multi_info_read until the handle is removed.
struct Done {
  CURL* easy;
  CURLcode code;
};
thread_local Done t_done[16];
thread_local unsigned t_done_next = 0;

void remember_result(CURL* easy, CURLcode code) {
  t_done[t_done_next++ % 16] = {easy, code};
}

bool take_result(CURL* easy, CURLcode* code) {
  for (Done& d : t_done)
    if (d.easy == easy) {
      *code = d.code;
      d.easy = nullptr;
      return true;
    }
  return false;
}

void add_us_attr(const txray::StepRef& s, const char* key, curl_off_t us) {
  if (us <= 0) return;
  char v[24];
  snprintf(v, sizeof v, "%lld", static_cast<long long>(us));
  txray::rec::add_attr(s, key, v);
}

// Fills a row from what libcurl knows about the transfer. Returns curl's total time in µs; *text is
// the row's text (the masked effective URL).
curl_off_t describe(const txray::StepRef& s, CURL* h, CURLcode rc, bool rc_known, std::string* text = nullptr) {
  auto getinfo = TXRAY_REAL(curl_easy_getinfo, kLib);
  if (!getinfo) return 0;
  char* url = nullptr;
  char* method = nullptr;
  long status = 0, header_size = 0, request_size = 0, redirects = 0;
  curl_off_t down = 0, up = 0, t_dns = 0, t_connect = 0, t_tls = 0, t_ttfb = 0, t_total = 0;
  getinfo(h, CURLINFO_EFFECTIVE_URL, &url);
  getinfo(h, CURLINFO_EFFECTIVE_METHOD, &method);
  getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  getinfo(h, CURLINFO_HEADER_SIZE, &header_size);
  getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
  getinfo(h, CURLINFO_REDIRECT_COUNT, &redirects);
  getinfo(h, CURLINFO_SIZE_DOWNLOAD_T, &down);
  getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up);
  getinfo(h, CURLINFO_NAMELOOKUP_TIME_T, &t_dns);
  getinfo(h, CURLINFO_CONNECT_TIME_T, &t_connect);
  getinfo(h, CURLINFO_APPCONNECT_TIME_T, &t_tls);
  getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &t_ttfb);
  getinfo(h, CURLINFO_TOTAL_TIME_T, &t_total);

  if (url) {
    std::string u = txray::http_call_url("", "", url, "");
    txray::rec::set_text(s, u);
    if (text) *text = std::move(u);
  }
  if (method) txray::rec::add_attr(s, "method", method);
  txray::rec::set_status(s, static_cast<int32_t>(status));
  // Plaintext HTTP bytes: response head + body read, request head + body written.
  txray::rec::add_bytes(s, static_cast<uint64_t>(header_size) + static_cast<uint64_t>(down),
                        static_cast<uint64_t>(request_size) + static_cast<uint64_t>(up));
  add_us_attr(s, "dns_us", t_dns);
  add_us_attr(s, "connect_us", t_connect);
  add_us_attr(s, "tls_us", t_tls);
  add_us_attr(s, "ttfb_us", t_ttfb);
  if (redirects > 0) add_us_attr(s, "redirects", redirects);
  txray::rec::add_attr(s, "client", "libcurl");
  if (rc_known && rc != CURLE_OK) {
    auto strerror_fn = TXRAY_REAL(curl_easy_strerror, kLib);
    txray::rec::set_error(s, strerror_fn ? strerror_fn(rc) : "curl error");
  }
  return t_total;
}

}  // namespace

extern "C" CURLcode curl_easy_perform(CURL* h) {
  auto real = TXRAY_REAL(curl_easy_perform, kLib);
  if (!real) return CURLE_FAILED_INIT;
  txray::HookGuard guard(txray::HookFamily::http_call);
  if (!guard) return real(h);
  txray::Transaction* tx = txray::rec::current();
  if (!tx) return real(h);
  txray::StepRef s = txray::rec::open(tx, txray::StepKind::HTTP_CALL);
  uint64_t span = txray::rec::new_id();
  txray::rec::set_id(s, span);
  txray::http_out::set_call_span(span);  // a traceparent inserted on curl's plain-HTTP socket carries it
  CURLcode rc = real(h);
  txray::SaveErrno keep;
  txray::http_out::set_call_span(0);
  describe(s, h, rc, true);
  uint64_t elapsed = txray::rec::close(s);  // also what a summary line got when the row was folded
  // The transaction may have changed under a long transfer only in odd programs; totals go to the
  // current one, which is where the row went.
  if (txray::Transaction* now = txray::rec::current())
    txray::rec::add_totals(now, {.call_ns = elapsed, .call_count = 1});
  return rc;
}

extern "C" CURLMcode curl_multi_perform(CURLM* m, int* running) {
  auto real = TXRAY_REAL(curl_multi_perform, kLib);
  if (!real) return CURLM_INTERNAL_ERROR;
  txray::HookGuard guard(txray::HookFamily::http_call);  // held only so that curl's bytes are not a second row
  return real(m, running);
}

extern "C" CURLMcode curl_multi_socket_action(CURLM* m, curl_socket_t fd, int ev_bitmask, int* running) {
  auto real = TXRAY_REAL(curl_multi_socket_action, kLib);
  if (!real) return CURLM_INTERNAL_ERROR;
  txray::HookGuard guard(txray::HookFamily::http_call);
  return real(m, fd, ev_bitmask, running);
}

extern "C" CURLMsg* curl_multi_info_read(CURLM* m, int* msgs_in_queue) {
  auto real = TXRAY_REAL(curl_multi_info_read, kLib);
  if (!real) {
    if (msgs_in_queue) *msgs_in_queue = 0;
    return nullptr;
  }
  CURLMsg* msg = real(m, msgs_in_queue);
  if (msg && msg->msg == CURLMSG_DONE && txray::host_thread_enabled()) {
    txray::SaveErrno keep;
    remember_result(msg->easy_handle, msg->data.result);
  }
  return msg;
}

extern "C" CURLMcode curl_multi_remove_handle(CURLM* m, CURL* easy) {
  auto real = TXRAY_REAL(curl_multi_remove_handle, kLib);
  if (!real) return CURLM_INTERNAL_ERROR;
  txray::HookGuard guard(txray::HookFamily::http_call);
  txray::Transaction* tx = guard ? txray::rec::current() : nullptr;
  if (tx && easy) {
    int saved = errno;
    CURLcode rc = CURLE_OK;
    bool known = take_result(easy, &rc);
    long status = 0;
    auto getinfo = TXRAY_REAL(curl_easy_getinfo, kLib);
    if (getinfo) getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    // A handle that never got a response and never reported a result was not a transfer (added and
    // removed again, or aborted before starting): no row.
    if (known || status != 0) {
      txray::StepRef s = txray::rec::add(tx, txray::StepKind::HTTP_CALL);
      std::string url;
      curl_off_t total_us = describe(s, easy, rc, known, &url);
      // the id sent in this transfer's traceparent, when the agent inserted one (plain HTTP)
      uint64_t span = txray::http_out::claim_curl_span(url);
      txray::rec::set_id(s, span ? span : txray::rec::new_id());
      uint64_t elapsed = static_cast<uint64_t>(total_us > 0 ? total_us : 0) * 1000;
      txray::rec::set_elapsed(s, elapsed);
      txray::rec::add_totals(tx, {.call_ns = elapsed, .call_count = 1});
    }
    errno = saved;
  }
  return real(m, easy);
}
