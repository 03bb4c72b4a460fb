#include "transport/identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cpu/clock.h"
#include "core/config.h"
#include "core/redact.h"
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
  // The arguments redacted (core/redact.h: URLs, --password=…, headers, user:pass): command lines
  // carry secrets as often as URLs do, and process-mode transactions are named after them.
  std::vector<std::string_view> rest_args;
  for (size_t i = args.find('\0'); i != std::string::npos && i < args.size();) {
    size_t next = args.find('\0', i + 1);
    if (next == std::string::npos) next = args.size();
    rest_args.emplace_back(std::string_view(args).substr(i + 1, next - i - 1));
    i = next;
  }
  std::string rest;
  if (!rest_args.empty()) {
    rest.push_back(' ');
    redact::append_args(redact::policy(), rest_args, rest, argv0);
  }
  id.command_line = (argv0 + rest).substr(0, kMaxCommandLine);
  id.argv_name = (basename_of(argv0) + rest).substr(0, 200);
  if (id.argv_name.empty()) id.argv_name = id.program;
  return id;
}

}  // namespace txray
