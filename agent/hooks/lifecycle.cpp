// The agent's life in a process: configuration and transport at load time, process mode, fork, exit.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/attribution.h"
#include "cpu/clock_page.h"
#include "core/config.h"
#include "cpu/stack_capture.h"
#include "core/counters.h"
#include "cpu/cpu_sampler.h"
#include "core/fd_table.h"
#include "core/ids.h"
#include "core/recorder.h"
#include "protocols/dispatch/socket_events.h"
#include "core/transaction.h"
#include "core/unattributed.h"
#include "transport/transport.h"
#include "hooks/hook.h"

namespace {

// The longest the agent may hold up the program's exit. What it costs in practice is less: the agent
// thread writes what is queued into its (already open) connection — microseconds — or, with no
// connection, makes one attempt bounded by 20 ms (transport.cpp: kExitConnectNs); a refused connection
// (collector down) fails in microseconds. Only a collector that is connected but not reading can take
// the whole bound.
constexpr uint32_t kExitFlushMs = 1000;

std::atomic<bool> g_exit_done{false};
std::atomic<int> g_exit_status{0};
std::atomic<bool> g_exit_status_known{false};

using MainFn = int (*)(int, char**, char**);
MainFn g_real_main = nullptr;

void note_exit_status(int status) {
  g_exit_status.store(status, std::memory_order_relaxed);
  g_exit_status_known.store(true, std::memory_order_release);
}

// Process mode learns the exit status of programs that return from main through this wrapper.
int main_wrapper(int argc, char** argv, char** envp) {
  int rc = g_real_main(argc, argv, envp);
  note_exit_status(rc);
  return rc;
}

// Responses still open at exit end there: the kernel closes the connections the process still holds,
// so a response that lasts until its connection closes (no Content-Length) is complete now — a
// fork-per-connection child that exit()s without closing its connection is the common case.
void end_open_connections() {
  txray::HookGuard guard(txray::HookFamily::socket);
  if (!guard) return;
  txray::fds::for_each_used(0, (txray::fds::kChunks << txray::fds::kChunkBits) - 1, [](int fd, txray::FdSlot& s) {
    if (s.kind.load(std::memory_order_relaxed) == txray::FdKind::inbound) txray::sock::on_close(fd);
  });
}

void at_exit() {
  if (g_exit_done.exchange(true)) return;
  if (!txray::hooks::g_enabled.load() || !txray::hooks::in_this_process()) return;
  int saved = errno;
  txray::transport::begin_exit();
  if (txray::rec::in_recorder()) {
    // exit() from a signal handler that interrupted the agent in the middle of a row: that row's
    // transaction is half changed and its lock (process mode) is held by this very thread — ending it
    // here hung the program. What is open is not sent; what was finished goes if the agent thread runs
    // (no allocation on this thread: the interrupted code may be inside malloc).
    txray::counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    if (!txray::transport::flush(kExitFlushMs, false)) txray::debug_log("exit: transport did not finish in time");
    errno = saved;
    return;
  }
  end_open_connections();
  if (txray::Transaction* t = txray::tx::process_transaction()) {
    int status = g_exit_status_known.load() ? g_exit_status.load() : 0;
    char err[48] = "";
    if (status != 0) std::snprintf(err, sizeof err, "exit status %d", status);
    txray::tx::end(t, status, err);
  }
  txray::unattr::rotate(true);
  if (!txray::transport::flush(kExitFlushMs)) txray::debug_log("exit: transport did not finish in time");
  errno = saved;
}

void child_after_fork() {
  if (!txray::hooks::g_enabled.load()) return;
  txray::hooks::g_pid.store(getpid());
  txray::tx::reset_tid_after_fork();
  txray::tx::forget_current_after_fork();
  txray::cpu::after_fork_child();
  txray::clock::page::after_fork_child();
  txray::ids::reseed();
  txray::sock::after_fork_child();
  txray::attr::after_fork_child();
  txray::transport::after_fork_child();
}

__attribute__((constructor)) void txray_agent_init() {
  txray::Config c = txray::parse_config([](const char* k) -> const char* { return std::getenv(k); });
  txray::set_config(c);
  txray::stacks::configure({.on = c.stacks, .slow_ns = uint64_t(c.stack_ms) * 1'000'000});
  txray::hooks::g_pid.store(getpid());
  if (!c.problems.empty()) txray::debug_log("configuration: %s", c.problems.c_str());
  if (c.mode == txray::Mode::off) return;
  txray::ids::reseed();
  txray::cpu::init(c);
  txray::clock::page::configure(c, txray::cpu::mechanism() == txray::cpu::Mechanism::perf);
  txray::transport::init(txray::read_identity());
  pthread_atfork(nullptr, nullptr, child_after_fork);
  std::atexit(at_exit);
  if (c.mode == txray::Mode::process) {
    txray::Transaction* t = txray::tx::begin(txray::transport::identity().argv_name, "process", true);
    txray::tx::set_process_transaction(t);
  }
  txray::hooks::g_enabled.store(true, std::memory_order_release);
  txray::debug_log("loaded: mode=%s collector=%s app=%s", txray::mode_name(c.mode), c.collector.c_str(),
                   txray::transport::identity().app.c_str());
}

// Runs after the program's atexit handlers and static destructors; covers exits that skipped atexit.
__attribute__((destructor)) void txray_agent_fini() { at_exit(); }

}  // namespace

extern "C" {

__attribute__((noreturn)) void exit(int status) {
  note_exit_status(status);
  auto real = TXRAY_REAL(exit, nullptr);
  if (real) real(status);
  _exit(status);
}

int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void* stack_end) {
  using StartFn = int (*)(MainFn, int, char**, void (*)(void), void (*)(void), void (*)(void), void*);
  auto real = reinterpret_cast<StartFn>(txray::hooks::resolve("__libc_start_main", nullptr));
  if (!real) _exit(127);
  if (txray::config().mode == txray::Mode::process) {
    g_real_main = main;
    main = main_wrapper;
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

}  // extern "C"
