// txray show --db FILE [--last N | --id TXID | --slowest N | --trace TRACE_ID | --unattributed | --drops | --shed] [--app NAME] [--json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "drops.h"
#include "shed.h"
#include "show_format.h"
#include "ids.h"
#include "profile_json.h"
#include "profile_text.h"
#include "reader.h"
#include "store.h"
#include "trace_tree.h"
#include "unattributed.h"

namespace txray::cli {

namespace {

void print_json_line(const nlohmann::ordered_json& j) {
  // Texts captured from programs may hold invalid UTF-8: replace it rather than fail.
  std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

void print_json(const Transaction& t, int depth = -1) {
  auto j = show::transaction_json(t);
  if (depth >= 0) j["depth"] = depth;
  print_json_line(j);
}

// --unattributed: per agent (and app) a header with the counts, then its steps, container by container.
// An empty result is not an error (exit 0): a service the agent attributes fully has none.
int print_unattributed(Reader& reader, const std::string& app, bool json, const std::string& db_path) {
  const auto counts = reader.unattributed_counts(app);
  if (counts.empty()) {
    if (!json) std::fprintf(stderr, "txray show: no unattributed steps in %s\n", db_path.c_str());
    return 0;
  }
  int64_t agent_id = -1;
  std::string agent_app;
  bool first = true;
  for (int64_t id : reader.unattributed_containers(app)) {
    auto c = reader.load(id);
    if (!c) continue;
    if (json) {
      for (const auto& j : show::unattributed_json(*c)) print_json_line(j);
      continue;
    }
    if (c->agent.id != agent_id || c->app != agent_app) {
      agent_id = c->agent.id;
      agent_app = c->app;
      std::vector<UnattributedCount> mine;
      for (const auto& u : counts)
        if (u.agent_id == agent_id && u.app == agent_app) mine.push_back(u);
      if (mine.empty()) continue;  // containers with START and END only
      std::cout << (first ? "" : "\n") << show::unattributed_header(c->agent, c->app, mine);
      first = false;
    }
    std::cout << show::unattributed_lines(*c);
  }
  std::cout.flush();
  return 0;
}

// --drops: when the agents dropped transactions, one line (or JSON object) per window. None is not an
// error (exit 0): most stores have none.
int print_drops(Reader& reader, const std::string& app, bool json, const std::string& db_path) {
  const auto windows = reader.drop_windows(app);
  if (json) {
    for (const auto& w : windows) print_json_line(show::drop_window_json(w));
    return 0;
  }
  if (windows.empty()) {
    std::fprintf(stderr, "txray show: no dropped transactions in %s\n", db_path.c_str());
    return 0;
  }
  std::cout << show::drops_text(windows);
  std::cout.flush();
  return 0;
}

// --shed: transactions counted but not stored (load shedding, head sampling), per app, name, minute.
int print_shed(const Db& db, const std::string& app, bool json, const std::string& db_path) {
  const auto rows = show::load_shed_rows(db, app);
  if (json) {
    for (const auto& r : rows) print_json_line(show::shed_row_json(r));
    return 0;
  }
  if (rows.empty()) {
    std::fprintf(stderr, "txray show: no shed or sampled-out transactions in %s\n", db_path.c_str());
    return 0;
  }
  std::cout << show::shed_text(rows);
  std::cout.flush();
  return 0;
}

}  // namespace

int show_main(int argc, char** argv) {
  CLI::App app{"Print stored transactions as X-View profiles: a header, then one row per step\n"
               "[NO][START_TIME][GAP][CPU_T] message (times in ms), END and TOTAL[response][cpu].\n"
               "Without a selection, the last transaction is shown.",
               "txray show"};
  std::string db_path, id_text, trace, app_name;
  int last = 0, slowest = 0;
  bool json = false;
  app.add_option("--db", db_path, "SQLite file written by txray collect")->required();
  auto* o_last = app.add_option("--last", last, "the N most recent transactions (oldest first)")->check(CLI::Range(1, 1000000));
  auto* o_id = app.add_option("--id", id_text, "the transaction with this txid (16 hex digits)");
  auto* o_slow = app.add_option("--slowest", slowest, "the N slowest transactions (slowest first)")->check(CLI::Range(1, 1000000));
  auto* o_trace = app.add_option("--trace", trace, "every transaction of this trace (32 hex digits), as a call tree");
  o_last->excludes(o_id)->excludes(o_slow)->excludes(o_trace);
  o_id->excludes(o_slow)->excludes(o_trace);
  o_slow->excludes(o_trace);
  bool unattributed = false;
  app.add_flag("--unattributed", unattributed,
               "the steps the agent could not attribute to any request, per process (see docs/agent.md)")
      ->excludes(o_last)
      ->excludes(o_id)
      ->excludes(o_slow)
      ->excludes(o_trace);
  bool drops = false;
  app.add_flag("--drops", drops,
               "when the agents dropped transactions (collector away, queue full): per process, why, how many, "
               "from the first drop to the last")
      ->excludes(o_last)
      ->excludes(o_id)
      ->excludes(o_slow)
      ->excludes(o_trace)
      ->excludes("--unattributed");
  bool shed = false;
  app.add_flag("--shed", shed,
               "transactions counted but not stored: shed by the collector under load or sampled out by the "
               "agents, per application, name and minute")
      ->excludes(o_last)
      ->excludes(o_id)
      ->excludes(o_slow)
      ->excludes(o_trace)
      ->excludes("--unattributed")
      ->excludes("--drops");
  app.add_option("--app", app_name, "only transactions of this application");
  app.add_flag("--json", json, "one JSON object per line per transaction");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  std::optional<uint64_t> txid;
  if (!id_text.empty() && !(txid = parse_hex64(id_text))) {
    std::fprintf(stderr, "txray show: --id wants a txid of 1 to 16 hex digits, got '%s'\n", id_text.c_str());
    return 2;
  }
  if (!trace.empty()) {
    if (!is_trace_hex(trace)) {
      std::fprintf(stderr, "txray show: --trace wants a trace id of 32 hex digits, got '%s'\n", trace.c_str());
      return 2;
    }
    for (auto& c : trace) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }

  try {
    Db db = open_store(db_path, OpenMode::kReadOnly);
    Reader reader(db);
    if (unattributed) return print_unattributed(reader, app_name, json, db_path);
    if (drops) return print_drops(reader, app_name, json, db_path);
    if (shed) return print_shed(db, app_name, json, db_path);
    std::vector<int64_t> ids;
    if (txid) ids = reader.by_txid(*txid, app_name);
    else if (slowest > 0) ids = reader.slowest(slowest, app_name);
    else if (!trace.empty()) ids = reader.by_trace(trace, app_name);
    else ids = reader.last(last > 0 ? last : 1, app_name);

    if (ids.empty()) {
      // JSON consumers get an empty stream; a person gets told (and a non-zero status).
      if (json) return 0;
      std::fprintf(stderr, "txray show: no matching transaction in %s\n", db_path.c_str());
      return 1;
    }

    if (trace.empty()) {
      // One transaction in memory at a time: --last 100000 streams.
      for (int64_t id : ids) {
        auto t = reader.load(id);
        if (!t) continue;
        if (json) print_json(*t);
        else std::cout << show::profile_text(*t);
      }
      // A person is told when transactions are missing from the store because agents dropped them.
      if (!json) {
        std::cout.flush();
        if (auto windows = reader.drop_windows(app_name); !windows.empty())
          std::fprintf(stderr, "%s", show::drops_note(windows).c_str());
        if (slowest > 0 || last > 0)  // lists of transactions: say that some were only counted
          if (auto rows = show::load_shed_rows(db, app_name); !rows.empty())
            std::fprintf(stderr, "%s", show::shed_note(rows).c_str());
      }
    } else {
      std::vector<Transaction> txs;
      for (int64_t id : ids)
        if (auto t = reader.load(id)) txs.push_back(std::move(*t));
      auto order = show::trace_order(txs);
      if (!json) {
        // The call tree first, then each profile indented by its depth.
        std::cout << "TRACE " << trace << "  (" << txs.size() << " transactions)\n";
        for (const auto& n : order) {
          const auto& t = txs[n.index];
          std::cout << std::string(4 * n.depth, ' ') << (n.depth ? "\\_ " : "") << hex16(t.txid) << "  " << t.app
                    << "  " << t.name << "  " << show::ms_precise(t.elapsed_ns) << " ms\n";
        }
      }
      for (const auto& n : order) {
        if (json) print_json(txs[n.index], n.depth);
        else std::cout << show::profile_text(txs[n.index], std::string(4 * n.depth, ' '));
      }
    }
    std::cout.flush();
    return 0;
  } catch (const StoreError& e) {
    std::fprintf(stderr, "txray show: %s\n", e.what());
    return 2;
  }
}

}  // namespace txray::cli
