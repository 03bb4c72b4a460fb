// Bind parameters of a statement, as recorded on its SQL steps (attribute "binds").
//
// With TXRAY_SQL=mask (the default) only each parameter's type is kept ("int, text, null"), so no value
// ever leaves the process; with raw the values are kept, each cut to TXRAY_SQL_MAX_BIND bytes
// ("42, 'bob', NULL"); with off nothing is recorded. The attribute text is rebuilt only when a bind
// changed it (in mask mode: when a parameter's type changed), so re-executing a prepared statement with
// new values of the same types costs no formatting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/shared_text.h"
#include "protocols/sql/sql_normalizer.h"

namespace txray::sql {

enum class BindType : uint8_t { unset, null, integer, real, text, blob, zeroblob, value, pointer, decimal, datetime };

const char* bind_type_name(BindType t);

class BindList {
 public:
  static constexpr int kMaxRecorded = 64;  // parameters past this show as "..."

  // Records parameter `index` (1-based, as SQLite numbers them). `raw` is the value as it should read in
  // raw mode, already quoted and cut ('text', 42, NULL); it is ignored (may be empty) in mask mode.
  void set(int index, BindType type, std::string_view raw, TextMode mode);
  void clear();
  bool empty() const { return slots_.empty(); }

  // The attribute value ("" when there are no parameters).
  const std::string& text();
  // The same, as a SharedText that every execution's row shares until the value changes (in mask mode
  // that is when a parameter's type changes, so re-executions record their binds with no allocation).
  const SharedText& shared();

 private:
  struct Slot {
    BindType type = BindType::unset;
    std::string raw;
  };
  std::vector<Slot> slots_;
  int total_ = 0;  // highest index seen
  std::string text_;
  SharedText shared_;
  bool dirty_ = false;
  bool shared_stale_ = true;  // shared_ was not rebuilt since text_ last changed
};

// libpq parameters (PQexecParams, PQexecPrepared and their send variants) in the same format.
// `formats[i]` 1 = binary (shown as binary(N) in raw mode), `values[i]` null = SQL NULL.
std::string format_pg_params(int n, const char* const* values, const int* lengths, const int* formats,
                             TextMode mode, size_t max_bind);

// One parameter of a MySQL/MariaDB prepared statement (a MYSQL_BIND) as mysql_stmt_execute sends it:
// `type` is its enum_field_types number (the wire protocol's numbers, the same in every client library),
// `buffer`/`length` its value as the program left it (read in raw mode only).
struct MysqlParam {
  int type = 6;  // MYSQL_TYPE_NULL
  bool is_null = false;
  bool is_unsigned = false;
  const void* buffer = nullptr;
  unsigned long length = 0;
};

// The kind a MySQL parameter shows as in mask mode (int, real, decimal, text, blob, datetime, null).
BindType mysql_bind_type(const MysqlParam& p);

// The value raw mode shows: 42, 1.5, 'text' (cut to max_bind), blob(N), NULL, datetime(2024-01-02 03:04:05).
std::string mysql_param_raw(const MysqlParam& p, size_t max_bind);

// Quotes `v` for raw mode: 'it''s', cut to max_bind bytes on a UTF-8 boundary.
std::string quote_value(std::string_view v, size_t max_bind);

}  // namespace txray::sql
