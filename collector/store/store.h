// Opening the txray SQLite store. The schema is collector/store/schema.sql, embedded at build time.
#pragma once

#include <string>

#include "sqlite_handle.h"

namespace txray {

inline constexpr int kSchemaVersion = 1;

enum class OpenMode {
  kCreate,    // the collector: create the file and the schema if missing, WAL, synchronous=NORMAL
  kReadOnly,  // show / report / viewer: the file must exist and be a txray store
};

// Throws StoreError with a message fit for the user ("... is not a txray store", "... does not exist").
Db open_store(const std::string& path, OpenMode mode);

// The embedded schema text (schema.sql as it was at build time).
const char* schema_sql();

}  // namespace txray
