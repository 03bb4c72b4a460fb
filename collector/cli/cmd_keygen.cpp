// txray keygen [-o DIR] [--force]: a CURVE key pair for the collector and one for its agents, as z85
// text files readable by their owner only (docs/security.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace txray::cli {

namespace {

// Writes `text` to `path` with mode 0600 from the first byte on (never readable by others, whatever the
// umask); refuses to replace a file unless `force`.
bool write_private(const std::string& path, const std::string& text, bool force) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "txray keygen: cannot create %s: %s%s\n", path.c_str(), std::strerror(errno),
                 errno == EEXIST ? " (--force replaces it)" : "");
    return false;
  }
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = (::close(fd) == 0) && ok;
  if (!ok) std::fprintf(stderr, "txray keygen: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  return ok;
}

}  // namespace

int keygen_main(int argc, char** argv) {
  CLI::App app{"Write a CURVE key pair for the collector (server.key, server.pub) and one for its agents\n"
               "(client.key, client.pub), z85 text, readable by their owner only. Then:\n"
               "  txray collect --listen tcp://0.0.0.0:7878 --curve-secret-key DIR/server.key --allowed-clients DIR/client.pub\n"
               "  TXRAY_SERVER_KEY=DIR/server.pub TXRAY_CLIENT_SECRET_KEY=DIR/client.key txray run --collector tcp://HOST:7878 -- CMD\n"
               "More agents' keys: run keygen again elsewhere and append their client.pub to the allowed file.",
               "txray keygen"};
  std::string dir = ".";
  bool force = false;
  app.add_option("-o,--output-dir", dir, "folder to write the four files into (created when missing)")
      ->capture_default_str();
  app.add_flag("--force", force, "replace existing key files");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!zmq_has("curve")) {
    std::fprintf(stderr, "txray keygen: this libzmq was built without CURVE support\n");
    return 2;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "txray keygen: cannot create %s: %s\n", dir.c_str(), std::strerror(errno));
    return 2;
  }
  struct Pair {
    const char* name;
    const char* secret_use;
    const char* public_use;
  };
  const Pair pairs[] = {
      {"server", "the collector's secret key: txray collect --curve-secret-key",
       "the collector's public key: agents' TXRAY_SERVER_KEY"},
      {"client", "an agent's secret key: TXRAY_CLIENT_SECRET_KEY",
       "an agent's public key: txray collect --allowed-clients (one key per line)"},
  };
  for (const auto& p : pairs) {
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0) {
      std::fprintf(stderr, "txray keygen: zmq_curve_keypair: %s\n", zmq_strerror(zmq_errno()));
      return 2;
    }
    std::string base = dir + "/" + p.name;
    if (!write_private(base + ".key", std::string("# txray CURVE key, ") + p.secret_use + ". Keep it secret.\n" + sec + "\n", force) ||
        !write_private(base + ".pub", std::string("# txray CURVE key, ") + p.public_use + "\n" + pub + "\n", force))
      return 2;
    std::printf("%s/%s.key  %s/%s.pub  %s\n", dir.c_str(), p.name, dir.c_str(), p.name, pub);
  }
  return 0;
}

}  // namespace txray::cli
