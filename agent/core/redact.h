// The one redaction policy for every value the agent records (docs/security.md, "What is recorded").
// Everything that can carry a user's secret passes through here before it is put in a transaction:
//   - query strings, inbound (the transaction's `query` attribute) and outbound (HTTP_CALL URLs):
//     values masked ("a=?&b=?"), but for the parameter names the user keeps (TXRAY_KEEP_QUERY=page,sort);
//   - URL userinfo ("http://bob:secret@host" -> "http://bob:?@host");
//   - path segments, only where the user names a template (TXRAY_MASK_PATH=/reset/*,/users/*/keys/*):
//     the segments at a `*` become `*` ("GET /reset/8f2a" -> "GET /reset/*"), in transaction names and
//     call URLs alike;
//   - headers: the agent keeps only Host, User-Agent and traceparent; is_secret_header() names the ones
//     that are never kept whatever a setting asks (Authorization, Cookie, Set-Cookie,
//     Proxy-Authorization);
//   - SQL literals and binds: protocols/sql (TXRAY_SQL), which takes its default from here.
// Raw mode (TXRAY_VALUES=raw, per application as every TXRAY_ setting) keeps query values, passwords
// in userinfo and SQL values for a debugging session; every transaction of such a process carries the
// attribute values=raw, which `txray show` and the viewer print in the profile header (VALUES: raw).
// Authentication exchanges of wire protocols are never parsed into anything stored, raw or not.
//
// A masked value is "?" everywhere (what the collector's second line writes too, and skips: it counts
// only what it masks itself), but a masked path segment, "*" (a "?" would read as a query).
//
// Pure functions of the policy: no I/O, no allocation but the output string's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace txray::redact {

struct Policy {
  bool raw = false;                     // TXRAY_VALUES=raw
  bool raw_query = false;               // raw, or the older TXRAY_MASK_QUERY=0: query values kept
  bool marked = false;                  // any value kept raw (also TXRAY_SQL=raw): values=raw on each transaction
  std::vector<std::string> keep_query;  // TXRAY_KEEP_QUERY: parameter names whose values are kept
  // TXRAY_MASK_PATH: templates, each a list of segments ("*" = masked, anything else must match)
  std::vector<std::vector<std::string>> path_templates;
};

// TXRAY_VALUES (mask | raw), TXRAY_KEEP_QUERY, TXRAY_MASK_PATH (nullptr: not set). What cannot be
// parsed is appended to *problems and left at its default (mask). core/config.cpp reads the variables
// (and the older TXRAY_MASK_QUERY, TXRAY_SQL) into Config::redaction.
Policy parse(const char* values, const char* keep_query, const char* mask_path, std::string* problems);

// The process's policy (set_config() sets it; defaults, all masked, before that).
const Policy& policy();
void set_policy(const Policy& p);

// Appends query string q ("a=1&b=2", no '?') to out with its values masked per p.
void append_query(const Policy& p, std::string_view q, std::string& out);
// Appends path (no query) to out, with the segments a template masks as "*". True if a template matched.
bool append_path(const Policy& p, std::string_view path, std::string& out);
// Appends an authority ("user:pass@host:port" or "host") with the password masked ("?") unless raw.
void append_authority(const Policy& p, std::string_view authority, std::string& out);
// Whether a path needs append_path at all (a template could match): one branch when none is set.
inline bool masks_paths(const Policy& p) { return !p.path_templates.empty(); }

// Appends a URL ("scheme://user:pass@host/path?query#fragment") redacted as a call's URL is: the
// password, the path segments a template names, the query values; the fragment dropped.
void append_url(const Policy& p, std::string_view url, std::string& out);

// A command line's arguments (argv[1..], in order) joined with spaces, each redacted (unless raw):
// URLs as append_url; "--password=x" and the argument after "--password" (any option whose name looks
// like a credential: password, passwd, pwd, secret, token, key, auth, credential) -> "?"; a header
// ("-H 'Authorization: Bearer x'", or such an argument alone) -> "Authorization: ?", raw or not; "-u user:pass"
// and "--user user:pass" -> "user:?". Two clients' own short forms, by the program's name: Redis's
// (redis-cli, redis-benchmark…: "-a PW") and MySQL/MariaDB's (mysql, mysqldump, mariadb…: "-pPW").
// Process-mode transactions are named after the command line, and every batch carries it.
void append_args(const Policy& p, const std::vector<std::string_view>& args, std::string& out,
                 std::string_view program = {});

// Whether an option or parameter name looks like a credential's (case-insensitive substring).
bool credential_name(std::string_view name);

// Headers never recorded, whatever a setting asks.
bool is_secret_header(std::string_view name);

}  // namespace txray::redact
