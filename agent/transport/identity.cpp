#include "transport/identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cpu/clock.h"
#include "core/config.h"
#include "core/ids.h"

#ifndef TXRAY_VERSION_STRING
#define TXRAY_VERSION_STRING "0.0.0"
#endif

namespace txray {
namespace {

constexpr size_t kMaxCommandLine = 1024;

std::string basename_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string read_cmdline_args() {
  std::string out;
  int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return out;
  out.assign(buf, size_t(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;  // NUL-separated
}

}  // namespace

Identity read_identity() {
  Identity id;
  id.instance_id = ids::next();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) id.host = host;
  id.pid = uint32_t(getpid());
  id.ppid = uint32_t(getppid());
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string args = read_cmdline_args();
  std::string argv0 = args.substr(0, args.find('\0'));
  // Without /proc (a container or sandbox masking it): argv[0] as glibc kept it at startup.
  if (args.empty() && program_invocation_name) {
    args = program_invocation_name;
    argv0 = args;
  }
  id.program = n > 0 ? basename_of(std::string(exe, size_t(n))) : basename_of(argv0);
  if (id.program.empty()) id.program = "unknown";
  id.app = config().app.empty() ? id.program : config().app;
  id.agent_version = TXRAY_VERSION_STRING;
  id.start_unix_ns = clock::unix_ns();
  id.mode = mode_name(config().mode);
  std::string joined = args;
  for (char& c : joined)
    if (c == '\0') c = ' ';
  id.command_line = joined.substr(0, kMaxCommandLine);
  size_t first_end = args.find('\0');
  std::string rest = first_end == std::string::npos ? std::string() : joined.substr(first_end);
  id.argv_name = (basename_of(argv0) + rest).substr(0, 200);
  if (id.argv_name.empty()) id.argv_name = id.program;
  return id;
}

}  // namespace txray
