// Who this agent instance is (AgentInfo on the wire). Computed at start-up and again in a forked child.
#pragma once

#include <cstdint>
#include <string>

namespace txray {

struct Identity {
  uint64_t instance_id = 0;
  std::string host;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string program;       // basename of /proc/self/exe
  std::string app;           // TXRAY_APP or program
  std::string agent_version;
  uint64_t start_unix_ns = 0;
  std::string mode;
  std::string command_line;  // argv joined by spaces, truncated
  std::string argv_name;     // basename(argv[0]) + arguments, for process-mode transaction names
};

// Reads /proc/self/{exe,cmdline} (without /proc: argv[0] as glibc kept it), gethostname() and the
// configuration.
Identity read_identity();

}  // namespace txray
