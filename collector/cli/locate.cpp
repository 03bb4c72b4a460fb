#include "locate.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#ifndef TXRAY_AGENT_FROM_BINDIR
#define TXRAY_AGENT_FROM_BINDIR "../lib/txray/libtxray-agent.so"
#endif

namespace txray::cli {
namespace {

bool readable(const std::string& p) { return !p.empty() && access(p.c_str(), R_OK) == 0; }

// The directory of the running txray binary: /proc/self/exe, else argv[0] (resolved against $PATH when it
// has no slash) for a container or sandbox without /proc. Empty when neither works.
std::string self_dir() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path;
  if (n > 0) {
    path.assign(self, size_t(n));
  } else {
    std::string argv0 = program_invocation_name ? program_invocation_name : "";
    if (!argv0.empty() && argv0.find('/') == std::string::npos) {
      const char* env = std::getenv("PATH");
      std::string dirs = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
      for (size_t start = 0; start <= dirs.size();) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string cand = (end > start ? dirs.substr(start, end - start) : ".") + "/" + argv0;
        if (access(cand.c_str(), X_OK) == 0) {
          argv0 = cand;
          break;
        }
        start = end + 1;
      }
    }
    if (argv0.find('/') == std::string::npos || !realpath(argv0.c_str(), self)) return {};
    path = self;
  }
  return path.substr(0, path.rfind('/'));
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

}  // namespace

std::string find_agent(std::string* tried) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TXRAY_AGENT"); env && *env) {
    candidates.push_back(env);
  } else if (std::string dir = self_dir(); !dir.empty()) {
    candidates.push_back(dir + "/" TXRAY_AGENT_FROM_BINDIR);
    candidates.push_back(dir + "/../lib/libtxray-agent.so");
  }
  for (const std::string& c : candidates) {
    if (readable(c)) {
      char real[PATH_MAX];
      return realpath(c.c_str(), real) ? std::string(real) : c;
    }
    if (tried) *tried += (tried->empty() ? "" : ", ") + c;
  }
  return {};
}

RuntimeShims find_runtime_shims(const std::string& agent) {
  std::string lib = agent.substr(0, agent.rfind('/'));
  std::string dir = lib + "/runtimes";
  if (!readable(dir)) dir = lib + "/txray/runtimes";
  RuntimeShims s;
  if (std::string node = dir + "/node/txray-hints.js"; readable(node)) s.node_require = node_require(node);
  if (std::string python = dir + "/python"; readable(python + "/sitecustomize.py")) s.python_path = python;
  return s;
}

}  // namespace txray::cli
