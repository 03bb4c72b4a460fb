// Subcommands of the txray CLI. Each takes (argc, argv) with argv[0] = the command's name and returns
// the process exit code.
#pragma once

namespace txray::cli {
int run_main(int argc, char** argv);      // cli/cmd_run.cpp
int collect_main(int argc, char** argv);  // cli/cmd_collect.cpp
int show_main(int argc, char** argv);     // cli/cmd_show.cpp
int keygen_main(int argc, char** argv);   // cli/cmd_keygen.cpp
int report_main(int argc, char** argv);   // report/cmd_report.cpp
int enable_main(int argc, char** argv);   // cli/cmd_enable.cpp
int disable_main(int argc, char** argv);  // cli/cmd_enable.cpp
int export_main(int argc, char** argv);   // cli/cmd_export.cpp
}  // namespace txray::cli
