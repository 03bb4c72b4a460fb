#include "text.h"

#include <cstdint>
#include <stdexcept>

namespace txray::samples::relay {

namespace {

const char* const kWords[] = {
    "order",    "customer", "status",   "shipped",  "pending",  "invoice",  "payment",  "address",
    "service",  "endpoint", "contract", "binding",  "message",  "channel",  "window",   "request",
    "response", "server",   "client",   "network",  "latency",  "through",  "between",  "before",
    "after",    "during",   "the",      "of",       "and",      "to",       "a",        "in",
    "is",       "was",      "for",      "with",     "on",       "by",       "from",     "at",
    "quickly",  "slowly",   "compress", "expand",   "buffer",   "stream",   "packet",   "header",
    "value",    "record",   "table",    "index",    "query",    "result",   "page",     "relay",
    "backend",  "frontend", "thread",   "process",  "memory",   "socket",   "reader",   "writer"};
constexpr size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

}  // namespace

std::string make_text(size_t bytes) {
  std::string t;
  t.reserve(bytes + 16);
  uint64_t x = 0x7478726179ull;  // "txray"; xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  size_t line = 0;
  bool sentence_start = true;
  while (t.size() < bytes) {
    std::string w = kWords[next() % kWordCount];
    if (sentence_start) w[0] = static_cast<char>(w[0] - 'a' + 'A');
    t += w;
    line += w.size();
    uint64_t r = next() % 16;
    sentence_start = r == 0;
    if (r == 0) t += '.';
    if (line > 72) {
      t += '\n';
      line = 0;
    } else {
      t += ' ';
      ++line;
    }
  }
  t.resize(bytes);
  return t;
}

namespace {
const std::string kPageHead = "<html><body><h1>relay</h1><p>words: ";
const std::string kPreOpen = "</p><pre>\n";
const std::string kPageTail = "</pre></body></html>\n";
}  // namespace

std::string make_page(const std::string& text) {
  // The "little work" of the relay page: count the words of what came back.
  size_t words = 0;
  bool in_word = false;
  for (char c : text) {
    bool letter = c != ' ' && c != '\n';
    if (letter && !in_word) ++words;
    in_word = letter;
  }
  std::string page = kPageHead + std::to_string(words) + kPreOpen;
  page.reserve(page.size() + text.size() + kPageTail.size());
  page += text;
  page += kPageTail;
  return page;
}

std::string page_text(const std::string& page) {
  size_t open = page.find(kPreOpen);
  if (page.compare(0, kPageHead.size(), kPageHead) != 0 || open == std::string::npos ||
      page.size() < open + kPreOpen.size() + kPageTail.size() ||
      page.compare(page.size() - kPageTail.size(), kPageTail.size(), kPageTail) != 0)
    throw std::runtime_error("not a relay page");
  size_t start = open + kPreOpen.size();
  return page.substr(start, page.size() - kPageTail.size() - start);
}

}  // namespace txray::samples::relay
