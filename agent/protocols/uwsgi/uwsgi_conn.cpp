#include "protocols/uwsgi/uwsgi_conn.h"

#include <cstdio>

#include "core/attribution.h"
#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"

namespace txray {

struct UwsgiServer::Vars final : uwsgi::VarsReader::Sink {
  CgiVars& v;
  explicit Vars(CgiVars& vars) : v(vars) {}
  bool wanted(std::string_view key) override { return CgiVars::wanted(key); }
  void on_var(std::string_view key, std::string_view value, bool truncated) override { v.take(key, value, truncated); }
};

void UwsgiServer::reset(std::string_view client, int fd) {
  on_close();
  client_.assign(client);
  fd_ = fd;
  vars_.reset();
  cgi_.clear();
  in_body_ = false;
  body_left_ = 0;
  dead_ = false;
}

void UwsgiServer::give_up() {
  if (!dead_) counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
  dead_ = true;
  if (tx_) finish("uwsgi stream not understood");
}

void UwsgiServer::begin() {
  tx_ = tx::begin(cgi_.name(), "http");
  tx_->client_addr = client_;
  Attr& a = tx_->attrs.emplace_back();
  a.key.assign("protocol");
  a.value.assign("uwsgi");
  cgi_.apply(tx_);
  resp_.reset(cgi_.method == "HEAD");
  body_left_ = cgi_.content_length;
  in_body_ = body_left_ > 0;
  attr::request_began(tx_, fd_);
}

bool UwsgiServer::on_read(const char* p, size_t n) {
  while (n > 0 && !dead_) {
    if (in_body_) {
      size_t take = body_left_ < n ? size_t(body_left_) : n;
      body_left_ -= take;
      if (tx_) tx_->bytes_read += take;
      p += take;
      n -= take;
      if (body_left_ == 0) in_body_ = false;
      continue;
    }
    if (tx_) {
      // Bytes before the response ended: a client that sends more than CONTENT_LENGTH. Not followed.
      give_up();
      break;
    }
    Vars sink(cgi_);
    if (vars_.done()) {
      vars_.reset();
      cgi_.clear();
    }
    size_t used = vars_.feed(p, n, sink);
    p += used;
    n -= used;
    if (vars_.dead()) {
      give_up();
      break;
    }
    if (vars_.done()) begin();
  }
  return !dead_;
}

bool UwsgiServer::on_write(const char* p, size_t n) {
  if (dead_) return false;
  if (tx_) ++tx_->io_calls;
  while (tx_ && n > 0) {
    size_t used = resp_.feed(p, n);
    tx_->bytes_written += used;
    p += used;
    n -= used;
    if (!resp_.done()) break;
    finish(nullptr);
  }
  return !dead_;
}

void UwsgiServer::on_write_opaque(uint64_t n) {
  if (!tx_) return;
  tx_->bytes_written += n;
  resp_.feed_opaque(n);
  if (resp_.done()) finish(nullptr);
}

void UwsgiServer::on_close() {
  if (!tx_) return;
  if (resp_.until_close() || resp_.done()) finish(nullptr);
  else finish("connection closed before the response was complete");
}

void UwsgiServer::finish(const char* error) {
  Transaction* t = tx_;
  tx_ = nullptr;
  int status = resp_.status();
  char msg[32];
  if (!error && status >= 500) {
    std::snprintf(msg, sizeof msg, "HTTP %d", status);
    error = msg;
  }
  tx::end(t, status, error ? error : "");
  vars_.reset();
  cgi_.clear();
}

Transaction* UwsgiServer::request(uint64_t txid) const {
  if (!tx_ || (txid && tx_->txid != txid)) return nullptr;
  return tx_;
}

}  // namespace txray
