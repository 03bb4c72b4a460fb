#include "protocols/memcached/memcached_client.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "core/counters.h"
#include "core/recorder.h"
#include "protocols/redis/cache_key.h"
#include "protocols/redis/cache_row.h"

namespace txray::memcached {
namespace {

enum class Cls : uint8_t { retrieval, storage, cas, mg, ms, meta, mn, simple, stats, quit };

struct Command {
  const char* name;
  Cls cls;
  uint8_t key;  // index of the key token (0: none)
};

// What the client side may write. A command not listed here stops the parsing of the connection.
constexpr Command kCommands[] = {
    {"get", Cls::retrieval, 1},   {"gets", Cls::retrieval, 1},  {"gat", Cls::retrieval, 2},
    {"gats", Cls::retrieval, 2},  {"set", Cls::storage, 1},     {"add", Cls::storage, 1},
    {"replace", Cls::storage, 1}, {"append", Cls::storage, 1},  {"prepend", Cls::storage, 1},
    {"cas", Cls::cas, 1},         {"delete", Cls::simple, 1},   {"incr", Cls::simple, 1},
    {"decr", Cls::simple, 1},     {"touch", Cls::simple, 1},    {"mg", Cls::mg, 1},
    {"ms", Cls::ms, 1},           {"md", Cls::meta, 1},         {"ma", Cls::meta, 1},
    {"me", Cls::meta, 1},         {"mn", Cls::mn, 0},           {"version", Cls::simple, 0},
    {"stats", Cls::stats, 0},     {"flush_all", Cls::simple, 0}, {"verbosity", Cls::simple, 0},
    {"quit", Cls::quit, 0},
};

const Command* find(std::string_view name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

bool starts_command(const char* p, size_t n) {
  size_t i = 0;
  while (i < n && i < 10 && ((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_')) ++i;
  if (i == 0 || i == n) return false;
  if (p[i] != ' ' && !(p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')) return false;
  return find(std::string_view(p, i)) != nullptr;
}

// Splits a line's kept head into tokens (at most kMax).
struct Tokens {
  static constexpr size_t kMax = 24;
  std::string_view t[kMax];
  size_t n = 0;
  explicit Tokens(std::string_view line) {
    size_t i = 0;
    while (i < line.size() && n < kMax) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) t[n++] = line.substr(i, j - i);
      i = j;
    }
  }
  std::string_view operator[](size_t i) const { return i < n ? t[i] : std::string_view(); }
};

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

bool has_flag(const Tokens& t, size_t from, std::string_view flag) {
  for (size_t i = from; i < t.n; ++i)
    if (t[i] == flag) return true;
  return false;
}

// Lines in both directions, with a bounded head kept, and the data blocks after some of them skipped by
// their length (never kept).
class LineReader {
 public:
  static constexpr size_t kHead = 512;
  enum class Ev : uint8_t { none, start, line, data, bad };
  // count_tokens: tokens() counts a whole line's words, past its kept head too (a `get` of many keys);
  // the replies' side has no use for it.
  explicit LineReader(bool count_tokens) : count_tokens_(count_tokens) {}
  // start: the first byte of a line was read; line: a whole line (head() is its start, without "\r\n");
  // data: the block expect_data() announced was skipped with its "\r\n".
  size_t feed(const char* p, size_t n, Ev* ev) {
    *ev = Ev::none;
    size_t i = 0;
    while (i < n) {
      if (st_ == St::fresh) {
        len_ = 0, full_ = 0, tokens_ = 0, in_token_ = false;
        st_ = St::line;
        *ev = Ev::start;
        return i;
      }
      if (st_ == St::line) {
        const char* nl = static_cast<const char*>(memchr(p + i, '\n', n - i));
        size_t take = nl ? size_t(nl - (p + i)) + 1 : n - i;
        size_t k = take < kHead - len_ ? take : kHead - len_;
        memcpy(head_ + len_, p + i, k);
        len_ += k;
        if (count_tokens_) {
          for (size_t j = 0; j < take; ++j) {
            bool sp = p[i + j] == ' ' || p[i + j] == '\r' || p[i + j] == '\n';
            if (!sp && !in_token_) ++tokens_;
            in_token_ = !sp;
          }
        }
        full_ += take;
        i += take;
        if (!nl) continue;
        st_ = St::fresh;
        *ev = Ev::line;
        return i;
      }
      if (st_ == St::data) {
        size_t take = data_left_ < n - i ? size_t(data_left_) : n - i;
        data_left_ -= take;
        i += take;
        if (!data_left_) st_ = St::crlf, crlf_ = 0;
        continue;
      }
      // crlf after a data block
      if (p[i] != (crlf_ ? '\n' : '\r')) {
        *ev = Ev::bad;
        return i;
      }
      ++i;
      if (++crlf_ == 2) {
        st_ = St::fresh;
        *ev = Ev::data;
        return i;
      }
    }
    return i;
  }
  // The line just read announced a data block of n bytes (then "\r\n").
  void expect_data(uint64_t n) {
    data_left_ = n;
    crlf_ = 0;
    st_ = n ? St::data : St::crlf;
  }
  // The line's kept head without its line end; cut() when the line was longer than kHead.
  std::string_view head() const {
    size_t k = len_;
    if (!cut()) {
      if (k && head_[k - 1] == '\n') --k;
      if (k && head_[k - 1] == '\r') --k;
    }
    return std::string_view(head_, k);
  }
  bool cut() const { return full_ > len_; }
  uint64_t tokens() const { return tokens_; }
  void reset() { *this = LineReader{count_tokens_}; }

 private:
  enum class St : uint8_t { fresh, line, data, crlf };
  St st_ = St::fresh;
  char head_[kHead];
  size_t len_ = 0;
  uint64_t full_ = 0, tokens_ = 0, data_left_ = 0;
  bool in_token_ = false;
  bool count_tokens_;
  uint8_t crlf_ = 0;
};

struct Pending {
  StepRef step;
  // Set while the row is not opened yet: a command line that ends in the write that started it opens its
  // row then, text, fingerprint and name in one recorder entry (the write's own call, so the time is the
  // write's); the client opens it at the end of that call otherwise. Never kept past the call.
  Transaction* unopened = nullptr;
  Cls cls = Cls::simple;
  bool quiet = false;     // a meta command with the q flag: no reply when it succeeds (mg: when it misses)
  uint64_t keys = 0;      // retrieval: keys asked for
  uint64_t hits = 0;
  uint64_t written = 0, read = 0;
  uint64_t key_hash = 0, opaque_hash = 0;  // meta commands: what a reply's k / O flags echo back
};

class MemcachedClient final : public WireClient {
 public:
  MemcachedClient(const WireEnv& env, StatementTx stx) : env_(env), statement_tx_(stx) {}

  void on_sent(const char* p, size_t n) override {
    feed_sent(p, n);
    open_unopened();
  }

  void feed_sent(const char* p, size_t n) {
    bool resolved = false;
    Transaction* tx = nullptr;
    while (n && !stopped_) {
      LineReader::Ev ev;
      size_t used = out_.feed(p, n, &ev);
      p += used;
      n -= used;
      cur_.written += used;
      switch (ev) {
        case LineReader::Ev::none: break;
        case LineReader::Ev::bad: return stop("a data block without its end");
        case LineReader::Ev::start:
          if (!resolved) {
            tx = statement_tx_(env_.owner ? *env_.owner : no_owner_);
            resolved = true;
          }
          cur_ = Pending{};
          cur_.unopened = tx;
          break;
        case LineReader::Ev::line:
          command_line();
          break;
        case LineReader::Ev::data:
          command_done();
          break;
      }
    }
  }

  void on_received(const char* p, size_t n) override {
    while (n && !stopped_) {
      LineReader::Ev ev;
      size_t used = in_.feed(p, n, &ev);
      p += used;
      n -= used;
      if (!q_.empty()) q_.front().read += used;
      else if (used && ev != LineReader::Ev::start) return stop("a reply to no command");
      switch (ev) {
        case LineReader::Ev::none:
        case LineReader::Ev::start: break;
        case LineReader::Ev::bad: return stop("a data block without its end");
        case LineReader::Ev::line: reply_line(); break;
        case LineReader::Ev::data: reply_data(); break;
      }
    }
  }

  void on_end(std::string_view why) override {
    std::string_view e = why.empty() ? std::string_view("connection closed before the reply") : why;
    close_all(e);
    cacherow::close(cur_.step, 0, cur_.written, e);
    out_.reset();
    in_.reset();
    cur_ = Pending{};
  }

  bool stopped() const override { return stopped_; }

 private:
  // The row of a command line still being written opens now, with no text yet.
  void open_unopened() {
    if (!cur_.unopened) return;
    cur_.step = cacherow::open(cur_.unopened, StepKind::MEMCACHED);
    cur_.unopened = nullptr;
  }

  void stop(const char* why) {
    if (stopped_) return;
    open_unopened();
    stopped_ = true;
    counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    std::string e = "wire protocol not followed (";
    e.append(why).append(")");
    close_all(e);
    cacherow::close(cur_.step, 0, cur_.written, e);
  }

  void close_all(std::string_view error) {
    while (!q_.empty()) {
      cacherow::close(q_.front().step, q_.front().read, q_.front().written, error);
      q_.pop();
    }
  }

  // A command line was written: its row gets its text; a storage command's data block comes next.
  void command_line() {
    std::string_view line = out_.head();
    Tokens t(line);
    const Command* c = find(t[0]);
    if (!c) return stop("not a memcached command");
    if (out_.cut() && c->cls != Cls::retrieval) return stop("a command line past its bounds");
    cur_.cls = c->cls;
    bool noreply = false;
    uint64_t data = 0;
    bool has_data = false;
    switch (c->cls) {
      case Cls::storage:
      case Cls::cas:
        if (!parse_u64(t[4], &data)) return stop("a storage command without its length");
        has_data = true;
        noreply = t[c->cls == Cls::cas ? 6 : 5] == "noreply";
        break;
      case Cls::ms:
        if (!parse_u64(t[2], &data)) return stop("a meta set without its length");
        has_data = true;
        cur_.quiet = has_flag(t, 3, "q");
        cur_.key_hash = cachekey::fingerprint(t[1]);
        for (size_t i = 3; i < t.n; ++i)
          if (t[i].size() > 1 && t[i][0] == 'O') cur_.opaque_hash = cachekey::fingerprint(t[i].substr(1));
        break;
      case Cls::mg:
      case Cls::meta:
        cur_.quiet = has_flag(t, 2, "q");
        cur_.key_hash = cachekey::fingerprint(t[1]);
        for (size_t i = 2; i < t.n; ++i)
          if (t[i].size() > 1 && t[i][0] == 'O') cur_.opaque_hash = cachekey::fingerprint(t[i].substr(1));
        break;
      case Cls::retrieval:
        cur_.keys = out_.tokens() > c->key ? out_.tokens() - c->key : 0;
        break;
      case Cls::simple:
        noreply = t.n > 1 && t[t.n - 1] == "noreply";
        break;
      default: break;
    }
    if (c->key && t.n <= c->key) return stop("a command without its key");
    if (cur_.unopened || (cur_.step && rec::usable(cur_.step))) {
      std::string& text = text_;  // its capacity stays: no allocation per command
      text.assign(c->name);
      std::string_view key = c->key ? t[c->key] : std::string_view();
      if (!key.empty()) {
        text.push_back(' ');
        cachekey::append(text, key, !cachekey::raw_keys());
      } else if (c->cls == Cls::stats && t.n > 1 && t[1].size() <= 16) {
        text.push_back(' ');
        cachekey::append(text, t[1], true);  // stats items, stats slabs…: a word, not a value
      }
      uint64_t fp;
      if (cachekey::raw_keys() && !key.empty()) {
        std::string masked(c->name);
        masked.push_back(' ');
        cachekey::append(masked, key, true);
        fp = cachekey::fingerprint(masked);
      } else {
        fp = cachekey::fingerprint(text);
      }
      if (cur_.unopened) {
        cur_.step = rec::open_unnested(cur_.unopened, StepKind::MEMCACHED, shared_text(fp, text), fp, "command",
                                       c->name);
        cur_.unopened = nullptr;
      } else {
        rec::set_text(cur_.step, shared_text(fp, text));
        rec::set_fingerprint(cur_.step, fp);
        rec::add_attr(cur_.step, "command", c->name);
      }
      if (cur_.keys > 1) add_num(cur_.step, "keys", cur_.keys);
      if (noreply) rec::add_attr(cur_.step, "noreply", "1");
      if (cur_.quiet) rec::add_attr(cur_.step, "quiet", "1");
    }
    if (has_data) {
      out_.expect_data(data);
      if (noreply) no_reply_ = true;
      return;
    }
    if (noreply || c->cls == Cls::quit) {
      // nothing comes back: the row ends with its write
      cacherow::close(cur_.step, 0, cur_.written, {});
      cur_ = Pending{};
      return;
    }
    command_done();
  }

  // The command's last byte was written: it waits for its reply (unless it said noreply).
  void command_done() {
    if (no_reply_) {
      no_reply_ = false;
      cacherow::close(cur_.step, 0, cur_.written, {});
      cur_ = Pending{};
      return;
    }
    Pending e = cur_;
    cur_ = Pending{};
    if (!q_.push(e)) {
      cacherow::close(e.step, 0, e.written, "wire protocol not followed (commands past the bound)");
      stop("commands past the bound");
    }
  }

  static void add_num(const StepRef& s, std::string_view key, uint64_t v) {
    char b[24];
    rec::add_attr(s, key, cacherow::decimal(b, v));
  }

  void finish(std::string_view result, std::string_view error) {
    Pending& e = q_.front();
    if (e.step && rec::usable(e.step)) {
      if (e.cls == Cls::retrieval) {
        add_num(e.step, "hits", e.hits);
        if (error.empty()) result = e.hits == 0 ? "miss" : e.hits >= e.keys ? "hit" : "partial";
      }
      if (!result.empty()) rec::add_attr(e.step, "result", result);
    }
    cacherow::close(e.step, e.read, e.written, error);
    q_.pop();
  }

  void reply_line() {
    std::string_view line = in_.head();
    Tokens t(line);
    std::string_view w = t[0];
    // a quiet meta command that got no reply: the reply is a later command's
    while (!q_.empty() && q_.front().quiet && w == "MN") {
      uint64_t mine = q_.front().read;  // the bytes of this line were counted for the quiet command
      q_.front().read = 0;
      finish("quiet", {});
      if (!q_.empty()) q_.front().read += mine;
    }
    // Quiet meta commands answer only when they have something to say: a reply that echoes a key (k) or
    // an opaque (O) is the first pending command's that sent it; without either, the oldest one's.
    uint64_t hk = 0, ho = 0;
    if (!q_.empty() && q_.front().quiet) {
      for (size_t i = 1; i < t.n; ++i) {
        if (t[i].size() > 1 && t[i][0] == 'k') hk = cachekey::fingerprint(t[i].substr(1));
        if (t[i].size() > 1 && t[i][0] == 'O') ho = cachekey::fingerprint(t[i].substr(1));
      }
    }
    while ((hk || ho) && q_.size() > 1 && q_.front().quiet &&
           !((hk && q_.front().key_hash == hk) || (ho && q_.front().opaque_hash == ho))) {
      uint64_t mine = q_.front().read;
      q_.front().read = 0;
      finish("quiet", {});
      q_.front().read += mine;
    }
    if (q_.empty()) return stop("a reply to no command");
    Pending& e = q_.front();
    if (w == "ERROR" || w == "CLIENT_ERROR" || w == "SERVER_ERROR") {
      return finish({}, std::string(line.substr(0, 200)));
    }
    uint64_t n;
    switch (e.cls) {
      case Cls::retrieval:
        if (w == "VALUE") {
          if (!parse_u64(t[3], &n)) return stop("a VALUE line without its length");
          in_.expect_data(n);
          return;
        }
        if (w == "END") return finish({}, {});
        return stop("not a retrieval reply");
      case Cls::stats:
        if (w == "END") return finish({}, {});
        if (w == "STAT" || w == "ITEM") return;
        return stop("not a stats reply");
      case Cls::mg:
      case Cls::meta:
        if (w == "VA") {
          if (!parse_u64(t[1], &n)) return stop("a VA line without its length");
          in_.expect_data(n);
          return;
        }
        if (e.cls == Cls::mg) return finish(w == "EN" ? "miss" : w == "HD" ? "hit" : w, {});
        return finish(w.size() <= 12 ? w : std::string_view(), {});
      case Cls::mn:
        if (w == "MN") return finish({}, {});
        return stop("not the reply of mn");
      default: {
        // STORED, NOT_STORED, EXISTS, NOT_FOUND, DELETED, TOUCHED, OK, HD, NS, EX, NF, VERSION, or incr's number
        uint64_t num;
        if (parse_u64(w, &num)) return finish("ok", {});
        return finish(w.size() <= 12 ? w : std::string_view(), {});
      }
    }
  }

  void reply_data() {
    Pending& e = q_.front();
    if (e.cls == Cls::retrieval) {
      ++e.hits;
      return;
    }
    // mg / ma with a value: the reply is complete
    finish(e.cls == Cls::mg ? "hit" : "VA", {});
  }

  // A row's text, shared with the rows of the same text before it (a copy bumps a count: no allocation,
  // no byte copy): a connection writes the same few patterns over and over. One entry per slot.
  const SharedText& shared_text(uint64_t fp, std::string_view text) {
    SharedText& t = texts_[fp % kTexts];
    if (t.view() != text) t = text;
    return t;
  }

  static constexpr size_t kTexts = 16;
  SharedText texts_[kTexts];
  std::string text_;
  WireEnv env_;
  StatementTx statement_tx_;
  ReqRef no_owner_;
  LineReader out_{true}, in_{false};
  Pending cur_;           // the command being written
  bool no_reply_ = false;  // the storage command being written said noreply
  cacherow::Fifo<Pending> q_;
  bool stopped_ = false;
};

}  // namespace

bool looks_like_command(const char* p, size_t n) { return starts_command(p, n); }

WireClient* make_client(const WireEnv& env, StatementTx stx) { return new (std::nothrow) MemcachedClient(env, stx); }

}  // namespace txray::memcached
