// Row mechanics of a transaction (internal to the core): creating rows with their GAP/CPU_T, the stack
// of open call steps, and folding steps past the limit into summaries. Callers hold the transaction's
// lock when it is shared (process mode).
#pragma once

#include "core/transaction.h"

namespace txray::rows {

// The START row (offset 0, GAP 0, CPU_T 0) and the clocks' origin.
void start(Transaction* t);
// A new step at now, child of the innermost open call of the calling thread; `call` = it stays open
// until close_at().
// Returns its index in t->steps.
int32_t add(Transaction* t, StepKind kind, bool call);
// Closes the open call at `index` (and any its thread opened after it that are still open) at now. Returns its
// elapsed_ns: the one number the step's row or its summary line got (a step past the limit is folded
// here, so nobody can read it from the list afterwards).
uint64_t close_at(Transaction* t, int32_t index);
// An open call that is nobody's parent and closes alone (as every call of a flat transaction): a stream
// of a multiplexed connection, which overlaps the others its thread wrote without nesting in them.
int32_t add_unnested(Transaction* t, StepKind kind);
// The END row, closing every step still open; sets elapsed_ns and cpu_ns.
void finish(Transaction* t);
// Folds closed steps past the limit at the end of the list into summaries.
void fold_tail(Transaction* t);

}  // namespace txray::rows
