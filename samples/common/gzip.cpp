#include "gzip.h"

#include <zlib.h>

#include <stdexcept>

namespace txray::samples {

namespace {
constexpr int kGzipWindow = 15 + 16;  // 15-bit window, +16 = gzip header and trailer
}

std::string gzip_compress(std::string_view data, int level) {
  if (level < 1 || level > 9) throw std::runtime_error("gzip level must be 1..9");
  z_stream s{};
  if (deflateInit2(&s, level, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&s, data.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

std::string gzip_decompress(std::string_view data) {
  z_stream s{};
  if (inflateInit2(&s, kGzipWindow) != Z_OK) throw std::runtime_error("inflateInit2 failed");
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[64 * 1024];
  int rc;
  do {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof buf;
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&s);
      throw std::runtime_error(rc == Z_BUF_ERROR ? "truncated gzip body" : "corrupt gzip body");
    }
    out.append(buf, sizeof buf - s.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&s);
  return out;
}

}  // namespace txray::samples
