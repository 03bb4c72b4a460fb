// pipe2(): only for the agent's own use of libunwind. libunwind (loaded by the agent for stacks and CPU
// samples, agent/cpu/stack_capture.*) opens a pipe at its first unwind and keeps it for the process's
// life: it checks addresses by writing them into it. Left where pipe2() puts it, it would take the
// program's lowest free numbers (the program's next open() or accept() would get other numbers than
// without the agent), and a program that closes or dup2()s every descriptor it did not open would
// close it, or worse, hand libunwind one of its own files to write into. So while the calling thread is
// inside libunwind, both ends are moved to the top of the table and marked as the agent's, like its
// collector socket (agent/transport/own_fd.h). Every other caller gets the plain system call.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu/stack_capture.h"
#include "transport/own_fd.h"

extern "C" __attribute__((visibility("default"))) int pipe2(int fds[2], int flags) {
  int r = static_cast<int>(syscall(SYS_pipe2, fds, flags));
  if (r != 0 || !txray::stacks::in_unwind()) return r;
  fds[0] = txray::transport::move_own_fd(fds[0]);
  fds[1] = txray::transport::move_own_fd(fds[1]);
  return 0;
}
