// Runs a command where perf_event_open is refused, as a container runtime's seccomp profile does it
// (Docker's default refuses it with EPERM; this one says EACCES): a seccomp filter that fails that one
// system call, then exec. Used to check the agent's CPU sampler falls back to the signal sampler
// (tests/e2e/test_cpu_samples.py).
// Usage: txray-rel-no-perf [--events-only] [--kill] CMD ARGS...
//   --events-only: only the calls that would make an event are refused (flags != 0: the agent's real
//   opens pass PERF_FLAG_FD_CLOEXEC, its start-up probe passes 0), so the probe passes and the first
//   thread's open fails, as a ring refused by a locked-memory limit would.
//   --kill: the call kills the process instead (SECCOMP_RET_KILL_PROCESS), as a systemd unit's
//   SystemCallFilter= does without SystemCallErrorNumber= (perf_event_open is not in @system-service).
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int events_only = argc > 1 && strcmp(argv[1], "--events-only") == 0;
  if (events_only) ++argv, --argc;
  int kill = argc > 1 && strcmp(argv[1], "--kill") == 0;
  if (kill) ++argv, --argc;
  if (argc < 2) {
    fprintf(stderr, "usage: %s CMD ARGS...\n", argv[0]);
    return 2;
  }
  unsigned refuse = kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),  // flags (low word)
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, events_only ? SECCOMP_RET_ALLOW : refuse),  // flags 0: the agent's probe
      BPF_STMT(BPF_RET | BPF_K, refuse),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    return 2;
  }
  execvp(argv[1], argv + 1);
  perror("exec");
  return 127;
}
