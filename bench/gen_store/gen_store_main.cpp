// txray-gen-store: creates a txray store filled with generated transactions. See README.md.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "gen_model.h"
#include "store_writer.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: txray-gen-store --db FILE --transactions N [options]\n"
               "  --db FILE            store to create (schema v1)\n"
               "  --transactions N     number of transactions (callees of traced calls included)\n"
               "  --seed S             random seed (default 1): same seed, same content\n"
               "  --span-seconds S     end times spread over S seconds (default 3600)\n"
               "  --days D             same as --span-seconds D*86400\n"
               "  --end-unix-ns T      the span ends at T (default: now)\n"
               "  --no-incident        no slow period (default: 3%% of the span, at 70%%, runs 4x slower)\n"
               "  --append             add to an existing store instead of refusing it\n"
               "  --force              replace an existing FILE\n");
}

long long parse_number(const char* opt, const char* v) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (errno || end == v || *end || n < 0) {
    std::fprintf(stderr, "txray-gen-store: %s wants a non-negative integer, got '%s'\n", opt, v);
    std::exit(2);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db;
  long long n = -1, seed = 1, span_s = 3600, end_ns = -1;
  bool incident = true, append = false, force = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "txray-gen-store: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--db") db = value();
    else if (a == "--transactions") n = parse_number("--transactions", value());
    else if (a == "--seed") seed = parse_number("--seed", value());
    else if (a == "--span-seconds") span_s = parse_number("--span-seconds", value());
    else if (a == "--days") span_s = parse_number("--days", value()) * 86400;
    else if (a == "--end-unix-ns") end_ns = parse_number("--end-unix-ns", value());
    else if (a == "--no-incident") incident = false;
    else if (a == "--append") append = true;
    else if (a == "--force") force = true;
    else if (a == "-h" || a == "--help") { usage(stdout); return 0; }
    else {
      std::fprintf(stderr, "txray-gen-store: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (db.empty() || n < 0) {
    usage(stderr);
    return 2;
  }
  if (span_s <= 0) {
    std::fprintf(stderr, "txray-gen-store: the span must be at least one second\n");
    return 2;
  }
  if (std::filesystem::exists(db) && !append) {
    if (!force) {
      std::fprintf(stderr, "txray-gen-store: %s exists (pass --force to replace it, --append to add to it)\n", db.c_str());
      return 2;
    }
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(db + suffix);
  }
  if (end_ns < 0)
    end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();

  const auto t0 = std::chrono::steady_clock::now();
  try {
    using txray::gen::StoreWriter;
    const auto catalog = txray::gen::Catalog::standard();
    StoreWriter writer(db, catalog, append ? StoreWriter::Mode::kAppend : StoreWriter::Mode::kBulk);
    txray::gen::Generator gen(catalog, static_cast<uint64_t>(seed), writer.next_id());

    // Top-level transactions are spread evenly (with jitter) so that N transactions, callees included,
    // fill the span.
    int total_weight = 0, calling_weight = 0;
    for (const auto& name : catalog.names) {
      total_weight += name.weight;
      if (name.call) calling_weight += name.weight;
    }
    const double per_top = 1.0 + static_cast<double>(calling_weight) / total_weight;
    const double span_ns = static_cast<double>(span_s) * 1e9;
    const double spacing = span_ns / std::max(1.0, static_cast<double>(n) / per_top);
    const double start_ns = static_cast<double>(end_ns) - span_ns;
    std::mt19937_64 jitter(static_cast<uint64_t>(seed) ^ 0x9e3779b97f4a7c15ull);
    std::uniform_real_distribution<double> u(0, 1);

    std::vector<txray::gen::TxRow> group;
    long long written = 0;
    for (long long top = 0; written < n; ++top) {
      const double t = start_ns + (static_cast<double>(top) + u(jitter)) * spacing;
      const double pos = (t - start_ns) / span_ns;
      const double slow = incident && pos >= 0.70 && pos < 0.73 ? 4.0 : 1.0;
      group.clear();
      const int64_t id_before = gen.next_id();
      gen.generate(static_cast<int64_t>(t), slow, group);
      if (written + static_cast<long long>(group.size()) > n) {  // a caller+callee pair would overshoot
        gen.rewind_ids(id_before);
        continue;
      }
      for (const auto& tx : group) writer.add(tx);
      written += static_cast<long long>(group.size());
    }
    writer.close();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "txray-gen-store: %lld transactions, %lld rows into %s in %.1f s\n", written,
                 static_cast<long long>(writer.rows_written()), db.c_str(), secs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-gen-store: %s\n", e.what());
    return 1;
  }
  return 0;
}
