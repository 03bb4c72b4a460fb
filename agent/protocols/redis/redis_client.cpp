#include "protocols/redis/redis_client.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "core/counters.h"
#include "core/recorder.h"
#include "protocols/redis/cache_key.h"
#include "protocols/redis/cache_row.h"
#include "protocols/redis/resp.h"

namespace txray::redis {

bool looks_like_command(const char* p, size_t n) {
  // "*<1..7 digits>\r\n$": the array of bulk strings every RESP client writes
  if (n < 5 || p[0] != '*') return false;
  size_t i = 1;
  while (i < n && i <= 8 && p[i] >= '0' && p[i] <= '9') ++i;
  if (i == 1 || i > 8 || p[1] == '0') return false;
  return i + 2 < n && p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '$';
}

namespace {

enum Flag : uint16_t {
  kNoKey = 1,         // no key in its arguments (or none worth a pattern)
  kSubcommand = 2,    // CLIENT SETNAME, CONFIG GET…: the second word is part of the command
  kSubKey = 4,        // …and the key is the third argument (OBJECT ENCODING key)
  kNoArgs = 8,        // credentials may follow: nothing after the name is looked at
  kSubscribe = 16,
  kUnsubscribe = 32,
  kSelect = 64,
  kMonitor = 128,
  kReset = 256,
  kClient = 512,
};

struct Special {
  const char* name;
  uint16_t flags;
};

// Commands that are not "<NAME> <key> …"; every other command is.
constexpr Special kSpecial[] = {
    {"AUTH", kNoArgs},      {"HELLO", kNoArgs},        {"PING", kNoKey},         {"ECHO", kNoKey},
    {"INFO", kNoKey},       {"MULTI", kNoKey},         {"EXEC", kNoKey},         {"DISCARD", kNoKey},
    {"QUIT", kNoKey},       {"DBSIZE", kNoKey},        {"TIME", kNoKey},         {"SAVE", kNoKey},
    {"BGSAVE", kNoKey},     {"BGREWRITEAOF", kNoKey},  {"LASTSAVE", kNoKey},     {"FLUSHDB", kNoKey},
    {"FLUSHALL", kNoKey},   {"RANDOMKEY", kNoKey},     {"WAIT", kNoKey},         {"SCAN", kNoKey},
    {"SWAPDB", kNoKey},     {"READONLY", kNoKey},      {"READWRITE", kNoKey},    {"ROLE", kNoKey},
    {"SHUTDOWN", kNoKey},   {"REPLICAOF", kNoKey},     {"SLAVEOF", kNoKey},      {"FAILOVER", kNoKey},
    {"MIGRATE", kNoArgs},   {"EVAL", kNoKey},          {"EVALSHA", kNoKey},      {"EVAL_RO", kNoKey},
    {"EVALSHA_RO", kNoKey}, {"FCALL", kNoKey},         {"FCALL_RO", kNoKey},     {"UNWATCH", kNoKey},
    {"LOLWUT", kNoKey},     {"SYNC", kNoArgs},         {"PSYNC", kNoArgs},       {"SELECT", kNoKey | kSelect},
    {"MONITOR", kNoKey | kMonitor},                    {"RESET", kNoKey | kReset},
    {"CLIENT", kNoKey | kSubcommand | kClient},        {"CONFIG", kNoKey | kSubcommand},
    {"SCRIPT", kNoKey | kSubcommand},                  {"CLUSTER", kNoKey | kSubcommand},
    {"COMMAND", kNoKey | kSubcommand},                 {"ACL", kNoKey | kSubcommand},
    {"FUNCTION", kNoKey | kSubcommand},                {"PUBSUB", kNoKey | kSubcommand},
    {"DEBUG", kNoKey | kSubcommand},                   {"MODULE", kNoKey | kSubcommand},
    {"LATENCY", kNoKey | kSubcommand},                 {"SLOWLOG", kNoKey | kSubcommand},
    {"SENTINEL", kNoKey | kSubcommand},                {"OBJECT", kSubcommand | kSubKey},
    {"MEMORY", kSubcommand | kSubKey},                 {"XINFO", kSubcommand | kSubKey},
    {"XGROUP", kSubcommand | kSubKey},                 {"SUBSCRIBE", kSubscribe},
    {"PSUBSCRIBE", kSubscribe},                        {"SSUBSCRIBE", kSubscribe},
    {"UNSUBSCRIBE", kUnsubscribe},                     {"PUNSUBSCRIBE", kUnsubscribe},
    {"SUNSUBSCRIBE", kUnsubscribe},
};

// kSpecial by first letter (A-Z), built once: most commands (GET, SET, HGET…) meet an empty or short
// list instead of the whole table, which was a tenth of a pipelined command's cost.
struct SpecialIndex {
  static constexpr size_t kPerLetter = 16;  // 'S' has the most: 13
  const Special* by[26][kPerLetter] = {};
  uint8_t len[26][kPerLetter] = {};
  uint8_t n[26] = {};
  SpecialIndex() {
    for (const Special& s : kSpecial) {
      size_t c = size_t(s.name[0] - 'A');
      if (c >= 26 || n[c] == kPerLetter) {
        whole = true;  // a name the index cannot hold: look through the whole table
        continue;
      }
      by[c][n[c]] = &s;
      len[c][n[c]++] = uint8_t(strlen(s.name));
    }
  }
  bool whole = false;
};

uint16_t flags_of(const char* name, size_t n) {
  static const SpecialIndex index;
  if (index.whole) {
    for (const Special& s : kSpecial)
      if (strlen(s.name) == n && !memcmp(s.name, name, n)) return s.flags;
    return 0;
  }
  if (n == 0 || name[0] < 'A' || name[0] > 'Z') return 0;
  size_t c = size_t(name[0] - 'A');
  for (uint8_t i = 0; i < index.n[c]; ++i)
    if (index.len[c][i] == n && !memcmp(index.by[c][i]->name, name, n)) return index.by[c][i]->flags;
  return 0;
}

size_t upper(char* out, const char* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = (in[i] >= 'a' && in[i] <= 'z') ? char(in[i] - 32) : in[i];
  return n;
}

bool is_pubsub_kind(const Head<24>& h, bool* unsub) {
  std::string_view s(h.b, h.len);
  *unsub = s == "unsubscribe" || s == "punsubscribe" || s == "sunsubscribe";
  return *unsub || s == "subscribe" || s == "psubscribe" || s == "ssubscribe";
}

bool is_message(const Head<24>& h) {
  std::string_view s(h.b, h.len);
  return s == "message" || s == "pmessage" || s == "smessage";
}

struct Pending {
  StepRef step;
  // Set while the row is not opened yet: a command whose last byte comes in the write that started it
  // opens its row then, text, fingerprint and name in one recorder entry (the write's own call, so the
  // time is the write's); the client opens the rest at the end of that call. Never kept past it.
  Transaction* unopened = nullptr;
  uint64_t written = 0;
  uint16_t flags = 0;
  int64_t db = -1;      // SELECT's argument
  bool complete = false;  // the command's last byte was written
};

class RedisClient final : public WireClient {
 public:
  RedisClient(const WireEnv& env, StatementTx stx) : env_(env), statement_tx_(stx) {}

  void on_sent(const char* p, size_t n) override {
    feed_sent(p, n);
    open_unopened();
  }

  void feed_sent(const char* p, size_t n) {
    // One statement_tx() per write: a runtime names the request a write belongs to, and a pipeline is
    // written in one go (the owner is consumed by its first command) — unless the runtime listed an
    // owner per command (on_listed_owners: node-redis writes the commands of many requests at once).
    bool resolved = false;
    Transaction* tx = nullptr;
    while (n && !stopped_) {
      CommandReader::Ev ev;
      size_t used = cmd_.feed(p, n, &ev);
      p += used;
      n -= used;
      if (ev == CommandReader::Ev::bad) {
        // a command cut short keeps the bytes it had, however the program's writes split them
        if (!q_.empty() && !q_.back().complete) q_.back().written = cmd_.bytes;
        return stop("not a RESP command");
      }
      if (ev == CommandReader::Ev::start) {
        Pending e;
        if (ReqRef listed; listed_owner(&listed)) {
          e.unopened = statement_tx_(listed);
        } else {
          if (!resolved) {
            tx = statement_tx_(env_.owner ? *env_.owner : no_owner_);
            resolved = true;
          }
          e.unopened = tx;
        }
        if (!q_.push(e)) {
          stop("pipeline deeper than the commands kept");
          e.step = cacherow::open(e.unopened, StepKind::REDIS);
          cacherow::close(e.step, 0, 0, "wire protocol not followed (pipeline deeper than the commands kept)");
          return;
        }
      } else if (ev == CommandReader::Ev::done) {
        if (q_.empty()) return stop("command without a row");  // cannot happen: start pushed it
        command_written(q_.back());
        if (stopped_) return;
      }
    }
    // bytes of a command still being written count for it
    if (!q_.empty() && !q_.back().complete) q_.back().written = cmd_.bytes;
  }

  void on_received(const char* p, size_t n) override {
    while (n && !stopped_) {
      FrameReader::Ev ev;
      size_t used = resp_.feed(p, n, &ev);
      p += used;
      n -= used;
      if (ev == FrameReader::Ev::bad) return stop("not a RESP reply");
      if (ev == FrameReader::Ev::frame) on_frame(resp_.frame());
    }
  }

  void on_end(std::string_view why) override {
    close_all(why.empty() ? std::string_view("connection closed before the reply") : why);
    cmd_.reset();
    resp_.reset();
    started_ = 0;
    owners_n_ = 0;
    subscribed_ = false;
    messages_ = 0;
    db_ = -1;
  }

  bool stopped() const override { return stopped_; }

  size_t max_listed_owners() const override { return kOwners; }
  // Owners the runtime listed for the next commands on this socket join those still kept when they
  // follow them; else they replace them (the list's numbers say which command each names).
  void on_listed_owners(const ReqRef* owners, size_t k, uint32_t first) override {
    if (k == 0) return;
    if (owners_n_ == 0 || owners_first_ + uint32_t(owners_n_) != first) {
      owners_first_ = first;
      owners_n_ = 0;
    }
    for (size_t i = 0; i < k && owners_n_ < kOwners; ++i, ++owners_n_)
      owners_[(owners_first_ + uint32_t(owners_n_)) % kOwners] = owners[i];
  }

 private:
  // The listed owner of the command starting now (the started_-th on the connection), if one is listed
  // for it; owners of commands before it are dropped.
  bool listed_owner(ReqRef* out) {
    uint32_t seq = started_++;
    while (owners_n_ && int32_t(seq - owners_first_) > 0) {
      ++owners_first_;
      --owners_n_;
    }
    if (!owners_n_ || owners_first_ != seq) return false;
    *out = owners_[owners_first_ % kOwners];
    ++owners_first_;
    --owners_n_;
    return out->valid();
  }

  // Rows of commands whose last byte did not come in their first write open now, with no text yet.
  void open_unopened() {
    for (size_t i = q_.size(); i-- > 0;) {
      Pending& e = q_.at(i);
      if (!e.unopened) break;  // only the newest commands can be unopened
      e.step = cacherow::open(e.unopened, StepKind::REDIS);
      e.unopened = nullptr;
    }
  }

  void stop(const char* why) {
    if (stopped_) return;
    open_unopened();
    stopped_ = true;
    counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    std::string e = "wire protocol not followed (";
    e.append(why).append(")");
    close_all(e);
  }

  void close_all(std::string_view error) {
    while (!q_.empty()) {
      Pending& e = q_.front();
      cacherow::close(e.step, 0, e.written, error);
      q_.pop();
    }
  }

  // The command's last byte went out: its name and key are known, the row gets its text.
  void command_written(Pending& e) {
    e.complete = true;
    e.written = cmd_.bytes;
    const Head<32>& a0 = cmd_.arg[0];
    char name[32];
    size_t nl = upper(name, a0.b, a0.len);
    e.flags = flags_of(name, nl);
    std::string& text = text_;  // its capacity stays: no allocation per command
    text.clear();
    cachekey::append(text, std::string_view(name, nl), false);
    if (a0.cut()) text.append("…");
    std::string_view command(text);
    size_t command_len = text.size();
    if (!(e.flags & kNoArgs)) {
      if ((e.flags & kSubcommand) && cmd_.args > 1) {
        char sub[32];
        size_t sl = upper(sub, cmd_.arg[1].b, cmd_.arg[1].len);
        text.push_back(' ');
        cachekey::append(text, std::string_view(sub, sl), false);
        command_len = text.size();
        if ((e.flags & kClient) && std::string_view(sub, sl) == "REPLY") {
          // CLIENT REPLY OFF|SKIP: replies stop matching commands
          if (e.unopened) {
            e.step = rec::open_unnested(e.unopened, StepKind::REDIS, SharedText(text), cachekey::fingerprint(text),
                                        "command", text);
            e.unopened = nullptr;
          }
          close_row(e, nullptr);
          return stop("CLIENT REPLY");
        }
        if ((e.flags & kSubKey) && cmd_.args > 2) {
          text.push_back(' ');
          cachekey::append(text, std::string_view(cmd_.arg[2].b, cmd_.arg[2].len), true);
        }
      } else if (!(e.flags & kNoKey) && cmd_.args > 1) {
        text.push_back(' ');
        cachekey::append(text, std::string_view(cmd_.key.b, cmd_.key.len), !cachekey::raw_keys());
        if (cmd_.key.cut() && (text.size() < 3 || text.compare(text.size() - 3, 3, "…"))) text.append("…");
      }
      if ((e.flags & kSelect) && cmd_.args > 1) {
        int64_t db;
        if (parse_int(cmd_.arg[1].b, cmd_.arg[1].len, &db) && db >= 0) e.db = db;
      }
    }
    command = std::string_view(text).substr(0, command_len);
    if (!e.unopened && (!e.step || !rec::usable(e.step))) return;
    // The fingerprint is the masked pattern's also when keys are kept raw, so raw rows group the same.
    uint64_t fp;
    if (cachekey::raw_keys() && !(e.flags & (kNoKey | kNoArgs)) && cmd_.args > 1) {
      std::string masked(command);
      masked.push_back(' ');
      cachekey::append(masked, std::string_view(cmd_.key.b, cmd_.key.len), true);
      fp = cachekey::fingerprint(masked);
    } else {
      fp = cachekey::fingerprint(text);
    }
    if (e.unopened) {
      e.step = rec::open_unnested(e.unopened, StepKind::REDIS, shared_text(fp, text), fp, "command", command);
      e.unopened = nullptr;
    } else {
      rec::set_text(e.step, shared_text(fp, text));
      rec::set_fingerprint(e.step, fp);
      rec::add_attr(e.step, "command", command);
    }
    if (!e.step) return;
    if (cmd_.args > 3) {
      char v[24];
      rec::add_attr(e.step, "args", cacherow::decimal(v, cmd_.args - 1));
    }
    if (db_ > 0 && !(e.flags & kSelect)) {
      char v[24];
      rec::add_attr(e.step, "db", cacherow::decimal(v, db_));
    }
  }

  void on_frame(const Frame& f) {
    bool unsub = false;
    if (f.kind == '>') {
      // RESP3 push: a subscription's confirmation answers its command; anything else is a message
      if (is_pubsub_kind(f.first, &unsub) && !q_.empty() && (q_.front().flags & (kSubscribe | kUnsubscribe))) {
        subscribed_ = !unsub || f.third > 0;
        return answer(f);
      }
      if (is_pubsub_kind(f.first, &unsub)) {
        subscribed_ = !unsub || f.third > 0;
        return;
      }
      ++messages_;
      return;
    }
    if (subscribed_ && f.kind == '*') {
      if (is_message(f.first)) {
        ++messages_;
        return;
      }
      if (is_pubsub_kind(f.first, &unsub)) {
        subscribed_ = !unsub || f.third > 0;
        if (!q_.empty() && (q_.front().flags & (kSubscribe | kUnsubscribe))) answer(f);
        return;
      }
    }
    if (q_.empty()) return stop("a reply to no command");
    if (f.kind == '*' && (q_.front().flags & (kSubscribe | kUnsubscribe)) && is_pubsub_kind(f.first, &unsub))
      subscribed_ = !unsub || f.third > 0;
    answer(f);
  }

  void answer(const Frame& f) {
    Pending& e = q_.front();
    // A server answers a command once it has read all of it: a reply before that is not this
    // conversation (and the rest of the command would belong to no row).
    if (!e.complete) return stop("a reply before its command was written");
    uint16_t flags = e.flags;
    bool ok = f.kind == '+';
    if ((flags & kSelect) && ok && e.db >= 0) db_ = e.db;
    if ((flags & kReset) && ok) {
      subscribed_ = false;
      db_ = -1;
    }
    close_row(e, &f);
    q_.pop();
    if ((flags & kMonitor) && ok) stop("MONITOR");
  }

  void close_row(Pending& e, const Frame* f) {
    if (!e.step || !rec::usable(e.step)) {
      e.step = StepRef{};
      return;
    }
    std::string error;
    uint64_t read = 0;
    if (f) {
      read = f->bytes;
      char kind[2] = {f->kind, 0};
      rec::add_attr(e.step, "reply", f->null ? std::string_view("nil") : std::string_view(kind, 1));
      if (f->elements >= 0) {
        char v[24];
        rec::add_attr(e.step, "elements", cacherow::decimal(v, f->elements));
      }
      if (f->kind == '+' && f->line.len <= 16 && !f->line.cut()) {
        // status words (OK, QUEUED, PONG, string…), not values
        bool word = f->line.len > 0;
        for (size_t i = 0; i < f->line.len && word; ++i)
          word = (f->line.b[i] >= 'A' && f->line.b[i] <= 'Z') || (f->line.b[i] >= 'a' && f->line.b[i] <= 'z') ||
                 f->line.b[i] == '_';
        if (word) rec::add_attr(e.step, "status", std::string_view(f->line.b, f->line.len));
      }
      if (f->kind == '-' || f->kind == '!') {
        error.assign(f->line.b, f->line.len);
        if (error.empty()) error = "error reply";
        if (f->line.cut()) error.append("…");
      }
    }
    if ((e.flags & kSelect) && e.db >= 0) {
      char v[24];
      rec::add_attr(e.step, "db", cacherow::decimal(v, e.db));
    }
    if (messages_) {
      char v[24];
      rec::add_attr(e.step, "messages", cacherow::decimal(v, messages_));
      messages_ = 0;
    }
    cacherow::close(e.step, read, e.written, error);
  }

  // A row's text, shared with the rows of the same text before it (a copy bumps a count: no allocation,
  // no byte copy): a connection writes the same few patterns over and over. One entry per slot.
  const SharedText& shared_text(uint64_t fp, std::string_view text) {
    SharedText& t = texts_[fp % kTexts];
    if (t.view() != text) t = text;
    return t;
  }

  static constexpr size_t kOwners = 128;  // as many as the Node shim lists
  ReqRef owners_[kOwners];  // listed owners of commands owners_first_, owners_first_ + 1…, a ring
  uint32_t owners_first_ = 0;
  size_t owners_n_ = 0;
  uint32_t started_ = 0;  // commands started on the connection

  static constexpr size_t kTexts = 16;
  SharedText texts_[kTexts];
  std::string text_;
  WireEnv env_;
  StatementTx statement_tx_;
  ReqRef no_owner_;
  CommandReader cmd_;
  FrameReader resp_;
  cacherow::Fifo<Pending> q_;
  bool stopped_ = false;
  bool subscribed_ = false;
  int64_t db_ = -1;
  uint64_t messages_ = 0;  // pub/sub messages since the connection's last row
};

}  // namespace

WireClient* make_client(const WireEnv& env, StatementTx stx) { return new (std::nothrow) RedisClient(env, stx); }

}  // namespace txray::redis
