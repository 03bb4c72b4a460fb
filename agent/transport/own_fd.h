// The agent's own descriptors inside someone else's process (PITFALLS 12). The program owns
// the descriptor table: it may have closed 0-2 and expect its next open() to fill them, close or dup2()
// every number it finds in /proc/self/fd, or run with RLIMIT_NOFILE 16. The agent holds one descriptor
// (the collector connection), and keeps it out of the program's way in one of two ways:
//
// - private table (the default): the agent thread unshare()s its descriptor table (CLONE_FILES) and
//   closes the copies of the program's descriptors that came with it. Its connection then lives in a
//   table of its own that the program never sees: not in /proc/self/fd, not reachable by close, dup2 or
//   close_range, not counted against the program's RLIMIT_NOFILE numbers, not inherited by fork().
// - shared table (unshare refused — some container seccomp profiles — or TXRAY_FD_TABLE=shared): the
//   connection is never 0, 1 or 2, sits at the top of the table where the program's own "lowest free
//   number" never reaches, and is marked so that the close/dup2 hooks keep the program's hands off it.
//
// Either way it is checked before every use in case it was closed or replaced behind the hooks.
#pragma once

#include <sys/types.h>

namespace txray::transport {

// Called first thing on the agent thread: gives it a private descriptor table unless `shared` is asked
// for or unshare() is refused. Keeps a copy of stderr when `keep_stderr` (TXRAY_DEBUG's messages), and
// nothing else of the program's: a copy would keep the program's files open after it closed them (a
// pipe whose reader waits for end of file, a socket whose peer waits for its close). True when private.
bool take_private_fd_table(bool shared, bool keep_stderr);
// Whether this process's agent thread has a private table (open_own_socket then neither moves nor marks).
bool private_fd_table();
// In a forked child: its agent thread (not the parent's, which does not exist there) decides anew.
void forget_private_fd_table();

// A stream socket for the agent (SOCK_NONBLOCK | SOCK_CLOEXEC). In the private table, a plain socket().
// In the shared one: moved (F_DUPFD_CLOEXEC) to the highest free number below min(RLIMIT_NOFILE, 1024) —
// near the top, but never so high that the kernel must grow the process's table past 1024 entries — and
// marked as the agent's. Never 0, 1 or 2, even when the program closed them (it will write its log lines
// there): with only those free, it fails with EMFILE. The new socket holds the lowest free number for
// the instant before its move: if the program closed that number in that instant (a sweep racing the
// connection attempt), it may hold the program's file now, so the agent leaves it alone and tries again
// (EAGAIN after three such races).
int open_own_socket(int domain);

// A descriptor the agent's code opened in the program's own table (libunwind's pipe, hooks/pipe_hooks.cpp):
// moved to the highest free number (as open_own_socket does in the shared table) and marked as the
// agent's, so the program's close/dup2 sweeps cannot take it. Returns the new number (the old one is
// closed), or fd itself, marked, when no higher number is free.
int move_own_fd(int fd);

// Closes a descriptor open_own_socket() returned and forgets its mark.
void release_fd(int fd);

// Forgets the mark without closing: the number is the program's now (it replaced the agent's file).
void disown_fd(int fd);

// The file behind fd, to recognise it later: false if fd is not open.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
};
bool file_id(int fd, FileId* out);
// True when fd still refers to the file `id` (the program did not close or replace it behind the hooks).
bool still_same(int fd, const FileId& id);

}  // namespace txray::transport
