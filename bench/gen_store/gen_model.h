// Generated transactions, as rows ready for the store (collector/store/schema.sql).
//
// The Generator builds each transaction's profile step by step (see ProfileBuilder in gen_model.cpp), so
// its totals are derived from the steps and hold exactly: sum(gap) == elapsed, sum(cpu) == cpu,
// sum(SQL elapsed) == sql_ns, sum(HTTP_CALL elapsed) == call_ns.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace txray::gen {

// One traced process of the catalog (agents table).
struct AgentDef {
  std::string app;
  std::string host;
  int64_t instance_id;
  int pid;
};

struct StepRow {
  const char* kind;  // START, END, SOCKET, SOCKET_CLOSE, MESSAGE, SQL, DB_CONNECT, HTTP_CALL, DNS
  int parent = -1;
  int64_t start_offset_ns = 0;
  int64_t gap_ns = 0;
  int64_t cpu_ns = 0;
  int64_t elapsed_ns = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int text = -1;  // index into Catalog::texts, -1 = no text
  std::string error;  // empty = NULL
  std::optional<int64_t> ref_id, rows, fetch_ns, fingerprint, status, changes, callee_tx_id;
  std::string attributes;  // JSON object, empty = NULL
};

struct TxRow {
  int64_t id = 0;  // transactions.id, assigned by the generator so that calls can link to callees
  int64_t txid = 0;
  std::string trace_id;
  int64_t parent_span_id = 0;
  int agent = 0;  // index into Catalog::agents
  std::string app, name, kind = "http";
  int64_t start_unix_ns = 0, end_unix_ns = 0, elapsed_ns = 0, cpu_ns = 0, sql_ns = 0, fetch_ns = 0,
          call_ns = 0;
  int sql_count = 0, call_count = 0, status = 200;
  std::string error;  // empty = NULL
  std::string client_addr;
  int64_t bytes_read = 0, bytes_written = 0, tid = 0;
  std::string attributes;
  std::vector<StepRow> steps;
};

// What the generator draws from: applications, their agents, transaction names and step texts.
struct Catalog {
  struct Sql {
    int text;              // index into texts
    int64_t median_us;     // execution time
    int max_rows;
    bool write;
  };
  struct Call {
    int url_text;          // index into texts (the HTTP_CALL's URL)
    int host_text;         // index into texts (the DNS step's host name)
    int callee;            // index into names: the transaction the callee runs
    bool big_response;     // the reference case: a large response decompressed on the caller's CPU
  };
  struct Name {
    std::string app, name;
    int weight;            // share of top-level traffic; 0 = runs only as a callee
    double median_ms, sigma;
    std::vector<int> sqls;  // indexes into sql: each transaction runs a random subset, in order
    int min_sql, max_sql;
    std::optional<Call> call;
    double error_rate;
  };
  std::vector<AgentDef> agents;
  std::vector<std::string> texts;
  std::vector<Sql> sql;
  std::vector<Name> names;
  std::vector<std::string> errors;  // transaction error texts
  int db_text = -1;                 // DB_CONNECT's text

  static Catalog standard();  // gen_catalog.cpp
  int agent_for(const std::string& app, uint64_t pick) const;
};

class Generator {
 public:
  Generator(const Catalog& catalog, uint64_t seed, int64_t first_id);

  // Appends one top-level transaction starting at start_unix_ns (and the callee transaction it calls,
  // if any) to out. slow_factor > 1 stretches response times (an incident).
  void generate(int64_t start_unix_ns, double slow_factor, std::vector<TxRow>& out);
  int64_t next_id() const { return next_id_; }
  // Gives back ids of a generated group that was dropped (so that ids stay dense).
  void rewind_ids(int64_t next_id) { next_id_ = next_id; }

 private:
  int pick_name();
  void build(int name_index, int64_t start_unix_ns, int64_t target_ns, double slow_factor,
             TxRow& tx, std::vector<TxRow>& out);
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  int64_t lognormal_ns(double median_ns, double sigma);
  std::string hex(int digits);

  const Catalog& catalog_;
  std::mt19937_64 rng_;
  int64_t next_id_;
  int total_weight_ = 0;
};

uint64_t fnv1a64(const std::string& s);

}  // namespace txray::gen
