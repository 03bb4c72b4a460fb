# Turns schema.sql into a C++ header (kSchemaSql) at build time, so the .sql file stays the one source
# of truth. Run as: cmake -DIN=schema.sql -DOUT=schema_sql.h -P embed_schema.cmake
file(READ ${IN} _sql)
string(FIND "${_sql}" ")txray_schema\"" _clash)
if(NOT _clash EQUAL -1)
  message(FATAL_ERROR "schema.sql contains the raw-string delimiter )txray_schema\"")
endif()
file(WRITE ${OUT}.tmp "// Generated from collector/store/schema.sql by embed_schema.cmake. Do not edit.\n#pragma once\nnamespace txray {\ninline constexpr const char kSchemaSql[] = R\"txray_schema(${_sql})txray_schema\";\n}\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
