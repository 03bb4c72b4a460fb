#include "agent_cost.h"

#include <map>

namespace txray::report {

void compute_agent_cost(const Db& db, const Selection& sel, Summary& s) {
  s.agent_cost.clear();
  if (sel.txs.empty()) return;
  {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='agent_cost'");
    has.step();
    if (has.i64(0) == 0) return;
  }
  // One walk of agent_cost over the selection's id range, merged with the selection (both by id).
  Stmt st(db, "SELECT tx_id, cost_ns FROM agent_cost WHERE tx_id BETWEEN ?1 AND ?2 ORDER BY tx_id");
  st.bind(1, sel.txs.front().id);
  st.bind(2, sel.txs.back().id);
  std::map<std::string, AppAgentCost> by_app;
  size_t i = 0;
  while (st.step()) {
    int64_t id = st.i64(0);
    while (i < sel.txs.size() && sel.txs[i].id < id) ++i;
    if (i == sel.txs.size()) break;
    if (sel.txs[i].id != id) continue;
    const TxRec& t = sel.txs[i];
    AppAgentCost& a = by_app[sel.groups[size_t(t.group)].app];
    a.transactions += 1;
    a.total_cost_ns += st.i64(1);
    a.total_elapsed_ns += t.elapsed;
  }
  for (auto& [app, a] : by_app) {
    a.app = app;
    s.agent_cost.push_back(a);
  }
}

}  // namespace txray::report
