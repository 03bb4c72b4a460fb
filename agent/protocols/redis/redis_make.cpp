// The dispatch's make_client, apart from the client itself: the unit tests link the client with a
// statement_tx() of their own, without the dispatch that defines wire::statement_tx.
#include "protocols/redis/redis_client.h"

namespace txray::redis {

WireClient* make_client(const WireEnv& env) { return make_client(env, &wire::statement_tx); }

}  // namespace txray::redis
