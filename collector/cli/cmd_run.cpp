// txray run [--collector E] [--app NAME] [--mode http|process] -- CMD ARGS...
// Replaces itself with CMD (execvp) with the agent preloaded, so CMD's exit status is txray's.
// The runtime shims staged next to the agent (installed: <libdir>/txray/runtimes/; build tree:
// lib/txray/runtimes/; sources: agent/runtimes/) are put in
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
#include "locate.h"
#include "traceable.h"

namespace txray::cli {

namespace {

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
  RuntimeShims s = find_runtime_shims(agent);
  if (!s.node_require.empty()) prepend_env("NODE_OPTIONS", s.node_require, " ");
  if (!s.python_path.empty()) prepend_env("PYTHONPATH", s.python_path, ":");
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
               "The agent is $TXRAY_AGENT, else the installed one (<bin>/../<libdir>/txray/libtxray-agent.so),\n"
               "else the build tree's (<bin>/../lib/libtxray-agent.so). The runtime shims beside it go into\n"
               "NODE_OPTIONS and PYTHONPATH unless TXRAY_RUNTIME_HINTS=0.",
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
  std::string tried;
  std::string agent = find_agent(&tried);
  if (agent.empty()) {
    std::fprintf(stderr, "txray run: agent library not found at %s (set TXRAY_AGENT)\n",
                 tried.empty() ? "<no path to this program: set TXRAY_AGENT>" : tried.c_str());
    return 2;
  }

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
  // Said before the exec, and the program still runs: it is the user's program either way.
  if (const std::string why = why_not_traceable(resolve_program(argv[split + 1])); !why.empty())
    std::fprintf(stderr, "txray run: %s cannot be traced: %s. It runs, but nothing will be recorded.\n",
                 argv[split + 1], why.c_str());
  std::fflush(stderr);

  execvp(argv[split + 1], argv + split + 1);
  int err = errno;
  std::fprintf(stderr, "txray run: cannot run %s: %s\n", argv[split + 1], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace txray::cli
