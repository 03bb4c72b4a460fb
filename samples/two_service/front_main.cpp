// two_service_front: the front service. GET /order/<id> calls the back-end (GET /price/<id>) over a
// keep-alive connection per front thread and answers a text built from the back-end's reply.
//   two_service_front --port 9101 --backend 9102
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "mini_http.h"

using namespace two_service;

int main(int argc, char** argv) {
  int port = std::atoi(option(argc, argv, "--port", "9101").c_str());
  int backend = std::atoi(option(argc, argv, "--backend", "9102").c_str());
  return serve(port, [backend](const Request& req) {
    Response r;
    if (req.target.rfind("/order/", 0) != 0) {
      r.status = 404;
      r.body = "no such resource\n";
      return r;
    }
    std::string id = req.target.substr(7);
    // one connection per serving thread, reused for every request of its client connection
    thread_local std::unique_ptr<Client> client;
    if (!client) client = std::make_unique<Client>(backend);
    int status = 0;
    std::string body, error;
    if (!client->get("/price/" + id, status, body, error)) {
      r.status = 502;
      r.body = "back-end failed: " + error + "\n";
      return r;
    }
    r.body = "order " + id + "\nback-end status " + std::to_string(status) + "\nprice " + body;
    return r;
  });
}
