// Random ids: transaction ids (= span ids), trace ids, socket uids, agent instance ids.
#pragma once

#include <cstdint>

namespace txray::ids {

uint64_t next();                 // random, non-zero; cheap (one atomic add + a mix)
void trace_id(uint8_t out[16]);  // random W3C trace id (not all zero)
// A transaction's txid and trace id with one atomic operation (begin() took two); the same
// values as next() and trace_id() would give for two consecutive counter values, never repeated.
void tx_ids(uint64_t* txid, uint8_t trace[16]);
void reseed();                   // draws a new seed (start-up and in a forked child)

}  // namespace txray::ids
