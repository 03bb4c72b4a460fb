// Dropped transactions: what the agents could not deliver (collector away, queue full) or what was lost on
// the way, from the drop_windows table (docs/schema.md). They are no transactions of the store; the
// summary counts them so that a reader knows what is missing, and when (`txray show --drops`).
#pragma once

#include "report.h"
#include "report_model.h"
#include "sqlite_util.h"

namespace txray::report {

// Fills s.dropped_transactions and s.dropped_by_reason: the counts of the drop windows of opt.app's
// agents that overlap [since, until]. --name and --min-ms concern transactions and do not apply. A
// store without the table has none.
void count_drops(const Db& db, const Options& opt, Summary& s);

}  // namespace txray::report
