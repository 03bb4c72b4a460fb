// Random ids: transaction ids (= span ids), trace ids, socket uids, agent instance ids.
#pragma once

#include <cstdint>

namespace txray::ids {

uint64_t next();                 // random, non-zero; cheap (one atomic add + a mix)
void trace_id(uint8_t out[16]);  // random W3C trace id (not all zero)
void reseed();                   // draws a new seed (start-up and in a forked child)

}  // namespace txray::ids
