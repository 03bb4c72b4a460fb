// Where the installed (or built) agent and its runtime shims are, for `txray run` and `txray enable`.
#pragma once

#include <string>

namespace txray::cli {

// The agent library, first match wins: $TXRAY_AGENT; the installed layout, <bin>/TXRAY_AGENT_FROM_BINDIR
// (e.g. ../lib/x86_64-linux-gnu/txray/libtxray-agent.so, from the install directories CMake was
// configured with); the build tree, <bin>/../lib/libtxray-agent.so. <bin> is the directory of the running
// txray (/proc/self/exe, else argv[0] looked up in $PATH when /proc is missing). Returns the real path, or
// "" with the places tried in *tried.
std::string find_agent(std::string* tried);

// The runtime shims beside AGENT (a real path): installed, <libdir>/txray/runtimes/; build tree,
// lib/txray/runtimes/. Each is "" when its files are not there.
struct RuntimeShims {
  std::string node_require;  // the NODE_OPTIONS word(s): --require <node shim>, quoted when needed
  std::string python_path;   // the PYTHONPATH entry holding sitecustomize.py
};
RuntimeShims find_runtime_shims(const std::string& agent);

}  // namespace txray::cli
