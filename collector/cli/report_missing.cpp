// Linked only while collector/report/ does not build the txray_report library (see ../CMakeLists.txt).
#include <cstdio>

#include "commands.h"

namespace txray::cli {
int report_main(int, char**) {
  std::fprintf(stderr, "txray report: not part of this build (collector/report/ defines no txray_report)\n");
  return 2;
}
}  // namespace txray::cli
