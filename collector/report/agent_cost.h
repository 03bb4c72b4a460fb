// The agent's own cost per application: the estimate each transaction carries (table
// agent_cost, docs/schema.md), summed over the selected transactions that have one. A store written
// before the table, or by agents that sent no figure, has none.
#pragma once

#include "report_model.h"
#include "selection.h"
#include "sqlite_util.h"

namespace txray::report {

// Fills s.agent_cost: one entry per application of the selection with at least one costed transaction,
// ordered by application.
void compute_agent_cost(const Db& db, const Selection& sel, Summary& s);

}  // namespace txray::report
