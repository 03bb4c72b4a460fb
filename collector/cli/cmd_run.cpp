// txray run [--collector E] [--app NAME] [--mode http|process] -- CMD ARGS...
// Replaces itself with CMD (execvp) with the agent preloaded, so CMD's exit status is txray's.
// The runtime shims staged next to the agent (<lib>/txray/runtimes/, agent/runtimes/) are put in
// NODE_OPTIONS (--require) and PYTHONPATH unless TXRAY_RUNTIME_HINTS=0 (docs/agent.md, "Runtimes").
#include <limits.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace txray::cli {

namespace {

bool readable(const std::string& p) { return !p.empty() && access(p.c_str(), R_OK) == 0; }

// $TXRAY_AGENT, else <dir of this binary>/../lib/libtxray-agent.so.
std::string find_agent() {
  if (const char* env = std::getenv("TXRAY_AGENT"); env && *env) return env;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = 0;
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/../lib/libtxray-agent.so";
}

// "--require PATH" for NODE_OPTIONS, which splits on spaces and takes "..." with \\-escapes.
std::string node_require(const std::string& path) {
  if (path.find_first_of(" \t\"\\") == std::string::npos) return "--require " + path;
  std::string q = "--require \"";
  for (char c : path) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// Prepends VALUE to the environment variable NAME (joined by SEP) unless it is already there.
void prepend_env(const char* name, const std::string& value, const char* sep) {
  const char* old = std::getenv(name);
  if (old && std::strstr(old, value.c_str())) return;
  std::string v = value;
  if (old && *old) v += sep + std::string(old);
  setenv(name, v.c_str(), 1);
}

// The runtime shims next to the agent library AGENT (a real path): NODE_OPTIONS=--require <node shim>,
// PYTHONPATH=<python shim dir>, each only when its files are there.
void add_runtime_shims(const std::string& agent) {
  if (const char* v = std::getenv("TXRAY_RUNTIME_HINTS"); v && std::strcmp(v, "0") == 0) return;
  std::string dir = agent.substr(0, agent.rfind('/')) + "/txray/runtimes";
  std::string node = dir + "/node/txray-hints.js";
  if (readable(node)) prepend_env("NODE_OPTIONS", node_require(node), " ");
  std::string python = dir + "/python";
  if (readable(python + "/sitecustomize.py")) prepend_env("PYTHONPATH", python, ":");
}

}  // namespace

int run_main(int argc, char** argv) {
  // Everything after the first "--" is the command, untouched by option parsing.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  CLI::App app{"Start a program with the txray agent preloaded (LD_PRELOAD). Its exit code is the program's.\n"
               "The agent is $TXRAY_AGENT or <bin>/../lib/libtxray-agent.so. The runtime shims next to it\n"
               "(<lib>/txray/runtimes/) go into NODE_OPTIONS and PYTHONPATH unless TXRAY_RUNTIME_HINTS=0.",
               "txray run"};
  std::string collector, app_name, mode;
  app.add_option("--collector", collector, "collector endpoint (TXRAY_COLLECTOR; default tcp://127.0.0.1:7878)");
  app.add_option("--app", app_name, "application name (TXRAY_APP; default: the program name)");
  app.add_option("--mode", mode, "http: one transaction per HTTP request; process: the whole run is one")
      ->check(CLI::IsMember({"http", "process"}));
  app.footer("usage: txray run [options] -- CMD [ARGS...]");
  try {
    app.parse(split, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (split >= argc - 1) {
    std::fprintf(stderr, "txray run: no command given (usage: txray run [options] -- CMD [ARGS...])\n");
    return 2;
  }
  std::string agent = find_agent();
  if (!readable(agent)) {
    std::fprintf(stderr, "txray run: agent library not found at %s (set TXRAY_AGENT)\n", agent.c_str());
    return 2;
  }
  char real[PATH_MAX];
  if (realpath(agent.c_str(), real)) agent = real;

  std::string preload = agent;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!collector.empty()) setenv("TXRAY_COLLECTOR", collector.c_str(), 1);
  if (!app_name.empty()) setenv("TXRAY_APP", app_name.c_str(), 1);
  if (!mode.empty()) setenv("TXRAY_MODE", mode.c_str(), 1);
  add_runtime_shims(agent);

  const char* dest = std::getenv("TXRAY_COLLECTOR");
  const char* eff_mode = std::getenv("TXRAY_MODE");
  std::fprintf(stderr, "txray run: %s with the agent (%s), sending to %s, mode %s%s%s\n", argv[split + 1],
               agent.c_str(), dest && *dest ? dest : "tcp://127.0.0.1:7878", eff_mode && *eff_mode ? eff_mode : "http",
               app_name.empty() ? "" : ", app ", app_name.c_str());
  std::fflush(stderr);

  execvp(argv[split + 1], argv + split + 1);
  int err = errno;
  std::fprintf(stderr, "txray run: cannot run %s: %s\n", argv[split + 1], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace txray::cli
