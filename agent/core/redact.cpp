#include "core/redact.h"

#include <cstring>

namespace txray::redact {

namespace {

Policy g_policy;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Calls f(item) for each non-empty item of a comma-separated list, spaces around items trimmed.
template <typename F>
void each_item(std::string_view list, F f) {
  size_t i = 0;
  while (i <= list.size()) {
    size_t comma = list.find(',', i);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(i, comma - i);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) f(item);
    i = comma + 1;
  }
}

// "/a/b/c" -> {"a", "b", "c"}; empty segments (a doubled or trailing slash) are kept as empty strings.
std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    out.emplace_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return out;
}

}  // namespace

Policy parse(const char* values, const char* keep_query, const char* mask_path, std::string* problems) {
  Policy p;
  if (values && *values) {
    if (!std::strcmp(values, "raw")) p.raw = p.raw_query = p.marked = true;
    else if (std::strcmp(values, "mask") != 0 && problems)
      problems->append("TXRAY_VALUES=").append(values).append(" (mask | raw; values stay masked); ");
  }
  if (keep_query) each_item(keep_query, [&](std::string_view name) { p.keep_query.emplace_back(name); });
  if (mask_path) {
    each_item(mask_path, [&](std::string_view t) {
      if (t.front() != '/' || t.find('*') == std::string_view::npos) {
        if (problems)
          problems->append("TXRAY_MASK_PATH item ").append(t).append(" (a path from '/' with '*' segments); ");
        return;
      }
      p.path_templates.push_back(segments(t));
    });
  }
  return p;
}

const Policy& policy() { return g_policy; }
void set_policy(const Policy& p) { g_policy = p; }

void append_query(const Policy& p, std::string_view q, std::string& out) {
  if (p.raw_query) {
    out.append(q);
    return;
  }
  size_t i = 0;
  while (i <= q.size()) {
    size_t amp = q.find('&', i);
    if (amp == std::string_view::npos) amp = q.size();
    std::string_view pair = q.substr(i, amp - i);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      out.append(pair);  // a bare name ("?debug") has no value to hide
    } else {
      std::string_view name = pair.substr(0, eq);
      bool keep = false;
      for (const std::string& k : p.keep_query)
        if (name == k) keep = true;
      if (keep) out.append(pair);
      else out.append(name).append("=?");
    }
    if (amp < q.size()) out.push_back('&');
    i = amp + 1;
  }
}

bool append_path(const Policy& p, std::string_view path, std::string& out) {
  if (p.path_templates.empty()) {
    out.append(path);
    return false;
  }
  // The first template whose segments all match the path's first segments ('*' matches any non-empty one).
  std::vector<std::string> segs = segments(path);
  for (const std::vector<std::string>& t : p.path_templates) {
    if (t.size() > segs.size()) continue;
    bool match = true;
    for (size_t i = 0; i < t.size() && match; ++i)
      match = t[i] == "*" ? !segs[i].empty() : t[i] == segs[i];
    if (!match) continue;
    size_t start = out.size();
    for (size_t i = 0; i < segs.size(); ++i) {
      out.push_back('/');
      out.append(i < t.size() && t[i] == "*" ? std::string_view("*") : std::string_view(segs[i]));
    }
    if (path.empty() || path.front() != '/') out.erase(start, 1);  // a relative path stays relative
    return true;
  }
  out.append(path);
  return false;
}

void append_authority(const Policy& p, std::string_view authority, std::string& out) {
  size_t at = authority.rfind('@');
  if (at == std::string_view::npos || p.raw) {
    out.append(authority);
    return;
  }
  std::string_view userinfo = authority.substr(0, at);
  size_t colon = userinfo.find(':');
  if (colon == std::string_view::npos) out.append(userinfo);  // a user name alone: no password to hide
  else out.append(userinfo.substr(0, colon)).append(":?");
  out.append(authority.substr(at));
}

void append_url(const Policy& p, std::string_view url, std::string& out) {
  size_t sep = url.find("://");
  size_t hash = url.find('#');
  if (sep == std::string_view::npos || hash < sep) {  // not a URL, or one inside a fragment ("x#http://")
    out.append(url);
    return;
  }
  if (hash != std::string_view::npos) url = url.substr(0, hash);
  size_t start = sep + 3;
  size_t end = url.find_first_of("/?", start);
  if (end == std::string_view::npos) end = url.size();
  out.append(url.substr(0, start));
  append_authority(p, url.substr(start, end - start), out);
  std::string_view rest = url.substr(end);
  size_t q = rest.find('?');
  append_path(p, rest.substr(0, q), out);
  if (q != std::string_view::npos) {
    out.push_back('?');
    append_query(p, rest.substr(q + 1), out);
  }
}

bool credential_name(std::string_view name) {
  static constexpr std::string_view kWords[] = {"password", "passwd", "pwd", "secret", "token", "key", "auth",
                                                "credential"};
  for (std::string_view w : kWords) {
    if (name.size() < w.size()) continue;
    for (size_t i = 0; i + w.size() <= name.size(); ++i)
      if (iequals(name.substr(i, w.size()), w)) return true;
  }
  return false;
}

namespace {
// An option whose next argument is a secret ("--password x", "--token x"): its name ends with one of
// these words, or is one of the short ones. Narrower than credential_name(), because a flag that takes
// no value ("--anyauth URL") would hide the argument after it.
bool takes_secret(std::string_view name) {
  static constexpr std::string_view kEnds[] = {"password", "passwd", "secret", "token", "apikey", "api-key", "api_key"};
  for (std::string_view w : kEnds)
    if (name.size() >= w.size() && iequals(name.substr(name.size() - w.size()), w)) return true;
  return iequals(name, "pwd") || iequals(name, "pass") || iequals(name, "key");
}
}  // namespace

namespace {
bool starts_with(std::string_view s, std::string_view w) { return s.size() >= w.size() && s.substr(0, w.size()) == w; }
}  // namespace

void append_args(const Policy& p, const std::vector<std::string_view>& args, std::string& out,
                 std::string_view program) {
  if (size_t slash = program.rfind('/'); slash != std::string_view::npos) program.remove_prefix(slash + 1);
  // redis-cli -a PW (also redis-benchmark, valkey-cli…); mysql -pPW (its password glued to the flag)
  const bool redis = starts_with(program, "redis-") || starts_with(program, "valkey-") || starts_with(program, "keydb-");
  const bool mysql = starts_with(program, "mysql") || starts_with(program, "mariadb");
  enum class Next { plain, secret, user } next = Next::plain;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (i) out.push_back(' ');
    size_t colon = a.find(':');
    if (colon != std::string_view::npos && a.find("://") == std::string_view::npos &&
        is_secret_header(a.substr(0, colon))) {
      out.append(a.substr(0, colon)).append(": ?");  // a header given whole, never kept even raw
      next = Next::plain;
      continue;
    }
    if (p.raw) {
      out.append(a);
      continue;
    }
    Next now = next;
    next = Next::plain;
    if (now == Next::secret) {
      out.append("?");
    } else if (a.find("://") != std::string_view::npos) {  // also after -u: redis-cli -u redis://user:pw@h
      append_url(p, a, out);
    } else if (now == Next::user && colon != std::string_view::npos) {
      out.append(a.substr(0, colon)).append(":?");
    } else if (redis && a == "-a") {
      out.append(a);
      next = Next::secret;
    } else if (mysql && a.size() > 2 && a[0] == '-' && a[1] == 'p') {
      out.append("-p?");
    } else if (a.size() > 1 && a[0] == '-') {
      std::string_view opt = a.substr(a[1] == '-' ? 2 : 1);
      size_t eq = opt.find('=');
      std::string_view name = opt.substr(0, eq);
      if (eq != std::string_view::npos && credential_name(name)) {
        out.append(a.substr(0, a.size() - (opt.size() - eq) + 1)).append("?");
      } else {
        out.append(a);
        if (eq == std::string_view::npos) {
          if (a == "-u" || a == "--user" || a == "--proxy-user") next = Next::user;
          else if (takes_secret(name)) next = Next::secret;
        }
      }
    } else {
      out.append(a);
    }
  }
}

bool is_secret_header(std::string_view name) {
  return iequals(name, "authorization") || iequals(name, "proxy-authorization") || iequals(name, "cookie") ||
         iequals(name, "set-cookie");
}

}  // namespace txray::redact
