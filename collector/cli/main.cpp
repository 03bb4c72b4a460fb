// txray: the command-line entry point. Each subcommand lives in its own file and parses its own
// arguments (CLI11); this file only dispatches.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);
};

const Command kCommands[] = {
    {"run", "start a program with the agent preloaded", txray::cli::run_main},
    {"collect", "receive transactions from agents and store them in SQLite", txray::cli::collect_main},
    {"show", "print stored transactions as X-View profiles (or JSON)", txray::cli::show_main},
    {"report", "export a slow-call report (Markdown, HTML, CSV, JSON)", txray::cli::report_main},
    {"export", "send stored transactions to an OpenTelemetry back-end (OTLP/HTTP)", txray::cli::export_main},
    {"keygen", "write CURVE key pairs for an authenticated collector and its agents", txray::cli::keygen_main},
    {"enable", "preload the agent into a systemd unit (writes a drop-in)", txray::cli::enable_main},
    {"disable", "remove the drop-in `txray enable` wrote", txray::cli::disable_main},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: txray <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'txray <command> --help' describes each command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("txray %s\n", TXRAY_VERSION_STRING);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (cmd == c.name) return c.main(argc - 1, argv + 1);  // argv[0] becomes the command name
  }
  std::fprintf(stderr, "txray: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
