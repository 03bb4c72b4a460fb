// The runtime hint channel (agent/hints/hint_protocol.h): a write() to the reserved descriptor number is
// a message from a runtime shim, answered in its own buffer, never a system call.
#include <cerrno>

#include "core/config.h"
#include "hints/hint_protocol.h"
#include "hooks/hook.h"

namespace txray::hooks {

bool hint_write(const void* buf, size_t n, long* result) {
  if (!host_thread_enabled() || config().mode != Mode::http) return false;  // the kernel says EBADF
  HookGuard guard(HookFamily::api);
  if (!guard) return false;
  hint::Message m;
  if (!hint::parse(static_cast<const char*>(buf), n, &m)) {
    errno = EINVAL;
    *result = -1;
    return true;
  }
  // The protocol's buffers are writable (a Node Buffer, a Python bytearray): the reply goes there.
  int saved = errno;
  hint::apply(m, static_cast<char*>(const_cast<void*>(buf)), n);
  errno = saved;
  *result = long(n);
  return true;
}

}  // namespace txray::hooks
