// Computes a Report from a store: the only part of the report that reads SQLite.
#pragma once

#include <string>

#include "report.h"
#include "report_model.h"

namespace txray::report {

// Checks the options that do not need the store (top, repeat, format, table). "" when valid.
std::string validate_options(const Options& opt);

// Fills out from the store opt.db with opt's filters. Returns "" or a one-line error.
std::string compute_report(const Options& opt, Report& out);

}  // namespace txray::report
