// gzip (RFC 1952) in memory with zlib: what an HTTP server does for Content-Encoding: gzip.
#pragma once

#include <string>
#include <string_view>

namespace txray::samples {

// Compresses `data` into a gzip member at zlib level 1..9. Throws on a zlib error.
std::string gzip_compress(std::string_view data, int level);
// Inflates one gzip member. Throws std::runtime_error on corrupt or truncated input.
std::string gzip_decompress(std::string_view data);

}  // namespace txray::samples
