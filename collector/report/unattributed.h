// Unattributed steps: the steps the agent could not attribute to any request, stored as the rows of
// per-process containers (transactions.kind 'unattributed', docs/schema.md). They are no transactions
// (select_transactions leaves the containers out); the summary counts their steps instead.
#pragma once

#include "report.h"
#include "report_model.h"
#include "sqlite_util.h"

namespace txray::report {

// Fills s.unattributed_steps and s.unattributed_by_kind: the steps (START and END rows left out, steps
// folded past the step limit included) of the containers of opt.app whose own start time lies in
// [since, until] (a folded step counts at its container's start). --name and --min-ms concern
// transactions and do not apply.
void count_unattributed(const Db& db, const Options& opt, Summary& s);

}  // namespace txray::report
