// two_service_back: the back-end. GET /price/<id> answers a small JSON document computed from the id
// (deterministic, so the front's answers can be compared byte for byte with and without the agent).
//   two_service_back --port 9102
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mini_http.h"

using namespace two_service;

int main(int argc, char** argv) {
  int port = std::atoi(option(argc, argv, "--port", "9102").c_str());
  return serve(port, [](const Request& req) {
    Response r;
    if (req.target.rfind("/price/", 0) != 0) {
      r.status = 404;
      r.body = "no such resource\n";
      return r;
    }
    unsigned long id = std::strtoul(req.target.c_str() + 7, nullptr, 10);
    // A little work per call, as a real lookup would do.
    unsigned long h = id * 2654435761ul;
    for (int i = 0; i < 20000; ++i) h = h * 6364136223846793005ul + 1442695040888963407ul;
    char body[160];
    std::snprintf(body, sizeof body, "{\"id\":%lu,\"price_cents\":%lu,\"currency\":\"EUR\",\"check\":\"%08lx\"}\n",
                  id, 100 + id * 37 % 9900, h & 0xffffffff);
    r.content_type = "application/json";
    r.body = body;
    return r;
  });
}
