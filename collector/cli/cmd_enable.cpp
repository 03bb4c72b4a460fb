// txray enable  [--unit-dir DIR] [--app NAME] [--collector E] [--mode M] [--runtime-hints] UNIT
// txray disable [--unit-dir DIR] UNIT
// Writes (removes) the systemd drop-in DIR/UNIT.d/txray.conf that preloads the agent into UNIT
// (docs/install.md, "Preloading into a systemd service"). It never talks to systemd: it says what to run.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "commands.h"
#include "locate.h"
#include "traceable.h"

#ifndef TXRAY_VERSION_STRING
#define TXRAY_VERSION_STRING "0.0.0"
#endif

namespace txray::cli {
namespace {

constexpr const char* kDropInName = "txray.conf";

// A unit name systemd accepts, with ".service" added when it has no type suffix. "" when invalid (it
// becomes part of a path: no '/', no "..", nothing systemd would refuse).
std::string unit_name(const std::string& u) {
  if (u.empty() || u.size() > 255 || u[0] == '.' || u[0] == '-') return {};
  for (char c : u)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr(":_.@-\\", c))) return {};
  if (u.find("..") != std::string::npos) return {};
  return u.find('.') == std::string::npos ? u + ".service" : u;
}

// One Environment= line, quoted for systemd ("…" with \\ and \" escaped; % doubled: a specifier).
std::string env_line(const std::string& key, const std::string& value) {
  std::string q = "Environment=\"" + key + "=";
  for (char c : value) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '%') q += '%';
    q += c;
  }
  return q + "\"\n";
}

// The program of the unit's first ExecStart= (its prefixes "@-:+!" dropped), read from the unit file in
// `unit_dir` or systemd's usual places; "" when no unit file or no ExecStart= is found.
std::string unit_program(const std::string& unit_dir, const std::string& name) {
  for (const std::string& dir : {unit_dir, std::string("/etc/systemd/system"), std::string("/lib/systemd/system"),
                                 std::string("/usr/lib/systemd/system")}) {
    std::ifstream in(dir + "/" + name);
    if (!in) continue;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("ExecStart=", 0) != 0) continue;
      size_t at = std::strlen("ExecStart=");
      while (at < line.size() && std::strchr("@-:+! \t", line[at])) ++at;
      const size_t end = line.find_first_of(" \t", at);
      return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
    }
    return {};
  }
  return {};
}

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return -1;
}

}  // namespace

int enable_main(int argc, char** argv) {
  CLI::App app{"Preload the txray agent into a systemd unit: writes the drop-in UNIT_DIR/UNIT.d/txray.conf\n"
               "(LD_PRELOAD, TXRAY_APP and the settings given). Then run: systemctl daemon-reload &&\n"
               "systemctl restart UNIT. The drop-in's LD_PRELOAD (and with --runtime-hints its PYTHONPATH and\n"
               "NODE_OPTIONS) replace the unit's own values of these variables: check them first with\n"
               "systemctl show -p Environment UNIT.",
               "txray enable"};
  std::string unit, unit_dir = "/etc/systemd/system", app_name, collector, mode;
  bool hints = false;
  app.add_option("UNIT", unit, "the unit (\"myapp\" means myapp.service)")->required();
  app.add_option("--unit-dir", unit_dir, "where drop-in directories go (default /etc/systemd/system)");
  app.add_option("--app", app_name, "application name (TXRAY_APP; default: the unit's name)");
  app.add_option("--collector", collector, "collector endpoint (TXRAY_COLLECTOR; default tcp://127.0.0.1:7878)");
  app.add_option("--mode", mode, "http: one transaction per HTTP request; process: the whole run is one")
      ->check(CLI::IsMember({"http", "process"}));
  app.add_flag("--runtime-hints", hints, "also set PYTHONPATH and NODE_OPTIONS to the asyncio and Node.js shims");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  std::string name = unit_name(unit);
  if (name.empty()) {
    std::fprintf(stderr, "txray enable: '%s' is not a unit name\n", unit.c_str());
    return 2;
  }
  std::string tried;
  std::string agent = find_agent(&tried);
  if (agent.empty()) {
    std::fprintf(stderr, "txray enable: agent library not found at %s (set TXRAY_AGENT)\n", tried.c_str());
    return 2;
  }
  if (app_name.empty()) app_name = name.substr(0, name.rfind('.'));

  std::string text = std::string("# Written by `txray enable` (txray ") + TXRAY_VERSION_STRING +
                     "): preloads the txray agent into this unit.\n"
                     "# Remove with `txray disable " + name + "`; after either: systemctl daemon-reload && "
                     "systemctl restart " + name + "\n[Service]\n";
  text += env_line("LD_PRELOAD", agent);
  text += env_line("TXRAY_APP", app_name);
  if (!collector.empty()) text += env_line("TXRAY_COLLECTOR", collector);
  if (!mode.empty()) text += env_line("TXRAY_MODE", mode);
  if (hints) {
    RuntimeShims s = find_runtime_shims(agent);
    if (!s.python_path.empty()) text += env_line("PYTHONPATH", s.python_path);
    if (!s.node_require.empty()) text += env_line("NODE_OPTIONS", s.node_require);
  }

  std::string dir = unit_dir + "/" + name + ".d";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "txray enable: cannot create %s: %s\n", dir.c_str(), std::strerror(errno));
    return 1;
  }
  std::string path = dir + "/" + kDropInName;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::fprintf(stderr, "txray enable: cannot write %s\n", tmp.c_str());
      ::unlink(tmp.c_str());
      return 1;
    }
  }
  ::chmod(tmp.c_str(), 0644);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "txray enable: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    ::unlink(tmp.c_str());
    return 1;
  }
  // Said, and the drop-in still written: the unit may start another program later.
  if (const std::string program = unit_program(unit_dir, name); !program.empty()) {
    if (const std::string why = why_not_traceable(resolve_program(program)); !why.empty())
      std::fprintf(stderr, "txray enable: %s (ExecStart of %s) cannot be traced: %s. Nothing will be recorded.\n",
                   program.c_str(), name.c_str(), why.c_str());
  }
  std::printf("wrote %s\nnow run: systemctl daemon-reload && systemctl restart %s\n", path.c_str(), name.c_str());
  return 0;
}

int disable_main(int argc, char** argv) {
  CLI::App app{"Stop preloading the txray agent into a systemd unit: removes UNIT_DIR/UNIT.d/txray.conf\n"
               "written by `txray enable`. Then run: systemctl daemon-reload && systemctl restart UNIT.",
               "txray disable"};
  std::string unit, unit_dir = "/etc/systemd/system";
  app.add_option("UNIT", unit, "the unit (\"myapp\" means myapp.service)")->required();
  app.add_option("--unit-dir", unit_dir, "where drop-in directories go (default /etc/systemd/system)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::string name = unit_name(unit);
  if (name.empty()) {
    std::fprintf(stderr, "txray disable: '%s' is not a unit name\n", unit.c_str());
    return 2;
  }
  std::string dir = unit_dir + "/" + name + ".d";
  std::string path = dir + "/" + kDropInName;
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      std::printf("%s is not enabled (no %s)\n", name.c_str(), path.c_str());
      return 0;
    }
    std::fprintf(stderr, "txray disable: cannot remove %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  ::rmdir(dir.c_str());  // only when empty: other drop-ins stay
  std::printf("removed %s\nnow run: systemctl daemon-reload && systemctl restart %s\n", path.c_str(), name.c_str());
  return 0;
}

}  // namespace txray::cli
