#include "http_sender.h"

#include <curl/curl.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <stdexcept>

namespace txray::otlp {

namespace {

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() < (1u << 20)) out->append(data, size * n);  // an error page need not be kept whole
  return size * n;
}

struct HeaderSink {
  std::string retry_after;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  std::string line(data, size * n);
  static const char kName[] = "retry-after:";
  if (line.size() > sizeof kName - 1) {
    bool match = true;
    for (size_t i = 0; i < sizeof kName - 1 && match; ++i)
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    if (match) {
      std::string v = line.substr(sizeof kName - 1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.erase(v.begin());
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
      static_cast<HeaderSink*>(user)->retry_after = v;
    }
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* abort = static_cast<const std::atomic<bool>*>(user);
  return abort && abort->load() ? 1 : 0;
}

}  // namespace

std::string traces_url(const std::string& endpoint) {
  auto scheme = endpoint.find("://");
  size_t path = endpoint.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return endpoint + "/v1/traces";
  if (path == endpoint.size() - 1) return endpoint + "v1/traces";
  return endpoint;
}

double parse_retry_after(const std::string& v, int64_t now_unix_s) {
  if (v.empty()) return -1;
  bool digits = true;
  for (char c : v) digits &= (c >= '0' && c <= '9') || c == '.';
  if (digits) {
    try {
      return std::stod(v);
    } catch (...) {
      return -1;
    }
  }
  time_t t = curl_getdate(v.c_str(), nullptr);
  if (t < 0) return -1;
  double d = static_cast<double>(t - now_unix_s);
  return d < 0 ? 0 : d;
}

std::string gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(n);
  return out;
}

HttpSender::HttpSender(std::string url, std::vector<std::string> headers, long timeout_ms,
                       const std::atomic<bool>* abort)
    : url_(std::move(url)), timeout_ms_(timeout_ms), abort_(abort) {
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
  headers_ = curl_slist_append(headers_, "Content-Type: application/x-protobuf");
  headers_ = curl_slist_append(headers_, "Expect:");  // no 100-continue round trip on large bodies
  for (const auto& h : headers) headers_ = curl_slist_append(headers_, h.c_str());
  headers_gzip_ = curl_slist_append(nullptr, "Content-Encoding: gzip");
  for (curl_slist* h = headers_; h; h = h->next) headers_gzip_ = curl_slist_append(headers_gzip_, h->data);
}

HttpSender::~HttpSender() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_slist_free_all(headers_);
  curl_slist_free_all(headers_gzip_);
}

PostResult HttpSender::post(const std::string& body, bool gzipped) {
  CURL* c = static_cast<CURL*>(curl_);
  PostResult r;
  HeaderSink hs;
  curl_easy_setopt(c, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, gzipped ? headers_gzip_ : headers_);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms_);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms_, 5000L));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &hs);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(abort_));
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    r.error = curl_easy_strerror(rc);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.http_status);
  r.retry_after_s = parse_retry_after(hs.retry_after, static_cast<int64_t>(time(nullptr)));
  return r;
}

}  // namespace txray::otlp
