#include "exporter.h"

#include <curl/curl.h>
#include <google/protobuf/arena.h>
#include <pthread.h>
#include <signal.h>

#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <random>

#include "http_sender.h"
#include "span_builder.h"

namespace txray::otlp {

namespace {

using Clock = std::chrono::steady_clock;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

bool retryable(long status) { return status == 0 || status == 429 || status == 502 || status == 503 || status == 504; }

}  // namespace

Exporter::Exporter(ExporterOptions opts) : opts_(std::move(opts)), url_(traces_url(opts_.endpoint)) {
  static std::once_flag curl_once;  // curl_global_init is not thread-safe: once, before the thread starts
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  thread_ = std::thread([this] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals go to the collector's receiving thread
    pthread_setname_np(pthread_self(), "txray-otlp");
    run();
  });
}

Exporter::~Exporter() { finish(std::chrono::milliseconds(0)); }

void Exporter::offer(const void* data, size_t size, const v1::Batch& decoded) {
  uint64_t n = 0;
  for (const auto& tx : decoded.transactions()) n += tx.kind() != "unattributed";
  stats_.offered_tx += n;
  {
    std::lock_guard lk(mu_);
    if (closing_) return;
    // Batches of no transaction (counters only, unattributed containers) may name a database the SQL
    // rows of later ones need (DbMemory): queued too while there is room, never counted as drops.
    bool room = queued_tx_ + n <= opts_.queue_transactions && queued_bytes_ + size <= opts_.queue_bytes;
    if (room) {
      queue_.push_back(Item{std::string(static_cast<const char*>(data), size), n});
      queued_tx_ += n;
      queued_bytes_ += size;
      cv_not_empty_.notify_one();
      return;
    }
  }
  stats_.dropped_tx += n;
}

void Exporter::push_wait(std::string bytes, uint64_t transactions) {
  stats_.offered_tx += transactions;
  std::unique_lock lk(mu_);
  cv_not_full_.wait(lk, [&] {
    return aborting_ || queue_.empty() ||
           (queued_tx_ + transactions <= opts_.queue_transactions && queued_bytes_ + bytes.size() <= opts_.queue_bytes);
  });
  if (aborting_) {
    stats_.dropped_tx += transactions;
    return;
  }
  queued_tx_ += transactions;
  queued_bytes_ += bytes.size();
  queue_.push_back(Item{std::move(bytes), transactions});
  cv_not_empty_.notify_one();
}

size_t Exporter::queued_transactions() const {
  std::lock_guard lk(mu_);
  return queued_tx_;
}

bool Exporter::pop(Item& out, Clock::time_point until) {
  std::unique_lock lk(mu_);
  if (!cv_not_empty_.wait_until(lk, until, [&] { return !queue_.empty() || closing_ || aborting_; })) return false;
  if (aborting_ || queue_.empty()) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  queued_tx_ -= out.transactions;
  queued_bytes_ -= out.bytes.size();
  cv_not_full_.notify_all();
  return true;
}

void Exporter::run() {
  std::unique_ptr<HttpSender> sender;
  DbMemory dbs;
  while (true) {
    {
      std::lock_guard lk(mu_);
      if (aborting_ || (closing_ && queue_.empty())) break;
    }
    Item item;
    if (!pop(item, Clock::now() + std::chrono::milliseconds(200))) continue;
    // One arena per request holds the decoded batches and the spans: a few block allocations instead of
    // one per span, attribute and string (the collector runs with one malloc arena for all its threads).
    google::protobuf::ArenaOptions ao;
    ao.start_block_size = 1u << 20;
    ao.max_block_size = 8u << 20;
    google::protobuf::Arena arena(ao);
    auto* req = google::protobuf::Arena::CreateMessage<ExportRequest>(&arena);
    BuildCounts total;
    auto deadline = Clock::now() + opts_.linger;
    while (true) {
      auto* batch = google::protobuf::Arena::CreateMessage<v1::Batch>(&arena);
      ingest::DecodeResult r = ingest::decode_batch(item.bytes.data(), item.bytes.size(), *batch, opts_.limits);
      if (r.ok()) {
        BuildCounts c = add_batch(*batch, *req, dbs);
        total.transactions += c.transactions;
        total.spans += c.spans;
        total.events += c.events;
      } else {
        stats_.failed_tx += item.transactions;  // cannot happen for what the collector accepted
      }
      if (total.spans >= opts_.max_spans_per_request) break;
      if (!pop(item, deadline)) break;
    }
    if (total.spans == 0) continue;
    if (!sender) sender = std::make_unique<HttpSender>(url_, opts_.headers, static_cast<long>(opts_.timeout.count()), &abort_);
    std::string body = req->SerializeAsString();
    if (opts_.gzip) body = gzip(body);
    send(*sender, body, total.transactions, total.spans);
  }
  // Done, or aborted: what is still queued is lost, and counted.
  std::lock_guard lk(mu_);
  stats_.dropped_tx += queued_tx_;
  queue_.clear();
  queued_tx_ = queued_bytes_ = 0;
  done_ = true;
  cv_done_.notify_all();
  cv_not_full_.notify_all();
}

// One request until the back-end takes it, refuses it for good, or max_retry has passed.
void Exporter::send(HttpSender& sender, const std::string& body, uint64_t transactions, uint64_t spans) {
  double backoff = opts_.backoff_initial_s;
  auto first_try = Clock::now();
  thread_local std::mt19937_64 rng{std::random_device{}()};
  while (true) {
    PostResult r = sender.post(body, opts_.gzip);
    if (r.http_status >= 200 && r.http_status < 300) {
      stats_.sent_tx += transactions;
      stats_.sent_spans += spans;
      ++stats_.requests;
      otpb::collector::trace::v1::ExportTraceServiceResponse resp;
      if (!r.body.empty() && resp.ParseFromString(r.body) && resp.has_partial_success() &&
          resp.partial_success().rejected_spans() > 0) {
        stats_.rejected_spans += static_cast<uint64_t>(resp.partial_success().rejected_spans());
        log_limited("the back-end rejected " + std::to_string(resp.partial_success().rejected_spans()) +
                    " spans: " + resp.partial_success().error_message());
      }
      if (int64_t since = stats_.refused_since_ns.exchange(0); since != 0)
        std::fprintf(stderr, "txray collect: otlp: %s takes spans again after %.1f s\n", url_.c_str(),
                     (steady_ns() - since) / 1e9);
      return;
    }
    if (abort_.load()) {  // stopping: the request in hand is lost like the queue
      stats_.dropped_tx += transactions;
      return;
    }
    stats_.last_refusal = r.http_status;
    std::string what = r.http_status ? "HTTP " + std::to_string(r.http_status) : r.error;
    if (!retryable(r.http_status)) {
      stats_.failed_tx += transactions;
      log_limited(url_ + " refused " + std::to_string(transactions) + " transactions for good: " + what + " " +
                  r.body.substr(0, 200));
      return;
    }
    int64_t expected = 0;
    if (stats_.refused_since_ns.compare_exchange_strong(expected, steady_ns()))
      std::fprintf(stderr, "txray collect: otlp: %s: %s; retrying with back-off\n", url_.c_str(), what.c_str());
    double wait = r.retry_after_s >= 0 ? std::min(r.retry_after_s, opts_.retry_after_max_s)
                                       : backoff * std::uniform_real_distribution<double>(0.8, 1.2)(rng);
    backoff = std::min(backoff * 2, opts_.backoff_max_s);
    double spent = std::chrono::duration<double>(Clock::now() - first_try).count();
    if (spent + wait > static_cast<double>(opts_.max_retry.count())) {
      stats_.failed_tx += transactions;
      log_limited("gave up on " + std::to_string(transactions) + " transactions after " + std::to_string(int(spent)) +
                  " s of " + what);
      return;
    }
    ++stats_.retries;
    if (!wait_abortable(wait)) {
      stats_.dropped_tx += transactions;  // stopping: the request in hand is lost like the queue
      return;
    }
  }
}

bool Exporter::wait_abortable(double seconds) {
  std::unique_lock lk(mu_);
  return !cv_abort_.wait_for(lk, std::chrono::duration<double>(seconds), [&] { return aborting_; });
}

void Exporter::log_limited(const std::string& line) {
  if (++logged_ > 10) return;  // the exporter's thread only
  std::fprintf(stderr, "txray collect: otlp: %s%s\n", line.c_str(),
               logged_ == 10 ? " (further problems are only counted)" : "");
}

std::string Exporter::status() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                ", otlp: sent %" PRIu64 " tx (%" PRIu64 " spans), queued %zu, dropped %" PRIu64 ", failed %" PRIu64
                ", rejected spans %" PRIu64,
                stats_.sent_tx.load(), stats_.sent_spans.load(), queued_transactions(), stats_.dropped_tx.load(),
                stats_.failed_tx.load(), stats_.rejected_spans.load());
  std::string out = buf;
  if (int64_t since = stats_.refused_since_ns.load(); since != 0) {
    long st = stats_.last_refusal.load();
    std::snprintf(buf, sizeof buf, " (REFUSED for %.0f s: %s, retrying)", (steady_ns() - since) / 1e9,
                  st ? ("HTTP " + std::to_string(st)).c_str() : "no answer");
    out += buf;
  }
  return out;
}

void Exporter::finish(std::chrono::milliseconds bound) {
  std::unique_lock lk(mu_);
  if (finished_) return;
  finished_ = true;
  closing_ = true;
  cv_not_empty_.notify_all();
  cv_not_full_.notify_all();
  // Deliver the queue for at most `bound`, then abort: retries stop, an HTTP request in flight is cut
  // (abort_ is checked by curl's progress callback), what is left is counted dropped.
  if (!cv_done_.wait_for(lk, bound, [&] { return done_; })) {
    aborting_ = true;
    abort_ = true;
    cv_abort_.notify_all();
    cv_not_empty_.notify_all();
    cv_not_full_.notify_all();
  }
  lk.unlock();
  if (thread_.joinable()) thread_.join();
}

}  // namespace txray::otlp

namespace txray::otlp {

bool header_lines(const std::vector<std::string>& in, std::vector<std::string>& out, std::string* why) {
  for (const auto& h : in) {
    auto eq = h.find('=');
    auto colon = h.find(':');
    size_t at = std::min(eq, colon);
    if (at == std::string::npos || at == 0 || h.find_first_of("\r\n") != std::string::npos) {
      *why = "--otlp-header wants KEY=VALUE, not '" + h + "'";
      return false;
    }
    std::string value = h.substr(at + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    out.push_back(h.substr(0, at) + ": " + value);
  }
  return true;
}

bool valid_endpoint(const std::string& e, std::string* why) {
  if ((e.rfind("http://", 0) == 0 && e.size() > 7) || (e.rfind("https://", 0) == 0 && e.size() > 8)) return true;
  *why = "--otlp-endpoint wants an http:// or https:// URL (OTLP/HTTP, e.g. http://127.0.0.1:4318), not '" + e + "'";
  return false;
}

}  // namespace txray::otlp
