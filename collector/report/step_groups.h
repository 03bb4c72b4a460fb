// SQL by fingerprint, outbound calls by host and path, cache commands (Redis, memcached) by command and
// key pattern, and repeated calls (N+1): one pass over the SQL, HTTP_CALL, REDIS and MEMCACHED steps of
// the selected transactions, in transactions.id order, plus the calls folded
// into step_summaries (they count in calls, total time, rows, errors and N+1; having no individual
// durations they are left out of p95 and max).
#pragma once

#include "report.h"
#include "report_model.h"
#include "selection.h"
#include "sqlite_util.h"

namespace txray::report {

void compute_step_groups(const Db& db, const Options& opt, const Selection& sel, Report& r);

}  // namespace txray::report
