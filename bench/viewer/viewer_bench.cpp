// txray-viewer-bench DB: the viewer's four figures on a big store, each the median of several runs,
// printed against its target and beside a baseline measured in the same run:
//   1. open -> first complete scatter (all rows loaded and painted)  vs  reading the same rows with sqlite3
//   2. a box over 100,000 dots -> list filled and painted            vs  the box query alone
//   3. a profile opens (click in the list -> steps painted)          vs  the profile query alone
//   4. 2,000 transactions/s arriving in live mode: longest UI-thread busy stretch (5 ms heartbeat)
//                                                                     vs  the same heartbeat, no arrivals
// It appends transactions for figure 4 and deletes them afterwards, so the store is unchanged.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTableView>
#include <QTimer>

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include "gen_model.h"
#include "list_panel.h"
#include "main_window.h"
#include "profile_panel.h"
#include "scatter_view.h"
#include "store.h"
#include "store_writer.h"

using namespace txray::viewer;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string runs(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : " ") + std::to_string(static_cast<int>(x + 0.5));
  return s;
}

// Runs the event loop until `signal` of `obj` fires (or 60 s pass).
template <typename Obj, typename Signal>
bool wait_for(Obj* obj, Signal signal) {
  QEventLoop loop;
  bool fired = false;
  auto c = QObject::connect(obj, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QTimer::singleShot(60000, &loop, &QEventLoop::quit);
  loop.exec();
  QObject::disconnect(c);
  return fired;
}

void report(const char* what, double value, double target, const char* base_what, double base,
            const std::vector<double>& all) {
  std::printf("%-44s %8.1f ms  target < %5.0f ms  %-4s | %s %7.1f ms (x%.1f) | runs: %s\n", what, value, target,
              value < target ? "ok" : "MISS", base_what, base, base > 0 ? value / base : 0.0, runs(all).c_str());
  std::fflush(stdout);
}

std::unique_ptr<MainWindow> open_window(const QString& db, double* ms) {
  auto w = std::make_unique<MainWindow>(false);
  w->resize(1600, 1000);
  w->show();
  QApplication::processEvents();
  QElapsedTimer t;
  t.start();
  w->openStore(db);
  if (!wait_for(w.get(), &MainWindow::loadFinished)) return nullptr;
  w->scatter()->repaint();  // the complete scatter, painted
  *ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
  return w;
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Heartbeat: a 5 ms timer on the UI thread; the longest time between ticks minus 5 ms is the longest
// stretch the UI thread was busy with something else. *cpu_of_worst: how much of that stretch the UI
// thread spent on the CPU (the rest it waited for a core: on a shared machine, the neighbours).
double longest_busy(int seconds, std::vector<double>* all = nullptr, double* cpu_of_worst = nullptr) {
  QEventLoop loop;
  QTimer beat;
  beat.setTimerType(Qt::PreciseTimer);
  beat.setInterval(5);
  QElapsedTimer clock;
  clock.start();
  qint64 last = clock.nsecsElapsed();
  double last_cpu = thread_cpu_ms();
  double worst = 0;
  QObject::connect(&beat, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    const double cpu = thread_cpu_ms();
    const double busy = static_cast<double>(now - last) / 1e6 - 5.0;
    if (busy > worst && cpu_of_worst) *cpu_of_worst = cpu - last_cpu;
    worst = std::max(worst, busy);
    last_cpu = cpu;
    if (all) all->push_back(busy);
    last = now;
  });
  beat.start();
  QTimer::singleShot(seconds * 1000, &loop, &QEventLoop::quit);
  loop.exec();
  return std::max(0.0, worst);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("txray-bench");
  if (argc != 2) {
    std::fprintf(stderr, "usage: txray-viewer-bench DB\n");
    return 2;
  }
  const QString db = QString::fromLocal8Bit(argv[1]);
  const std::string path = argv[1];
  std::mt19937_64 rng(42);
  int64_t rows = 0;
  {
    Store s(path);
    rows = s.count();
  }
  std::printf("store %s: %lld transactions; medians of several runs\n", path.c_str(), static_cast<long long>(rows));

  // 1. open -> first complete scatter
  std::vector<double> open_ms, open_base;
  std::unique_ptr<MainWindow> w;
  for (int run = 0; run < 5; ++run) {
    {
      QElapsedTimer t;
      t.start();
      Store s(path);
      const auto b = s.load_points(0, rows + 1);
      open_base.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      if (static_cast<int64_t>(b.points.size()) != rows) return 1;
    }
    w.reset();
    double ms = 0;
    w = open_window(db, &ms);
    if (!w) {
      std::fprintf(stderr, "viewer did not load %s\n", argv[1]);
      return 1;
    }
    if (static_cast<int64_t>(w->points().size()) != rows) return 1;
    open_ms.push_back(ms);
  }
  report("open -> first complete scatter (1M dots)", median(open_ms), 1500, "sqlite3 read of the dots", median(open_base), open_ms);

  // 2. a box over 100,000 dots -> list filled
  std::vector<double> box_ms, box_base;
  int64_t box_rows = 0;
  const auto& pts = w->points().points();
  for (int run = 0; run < 5; ++run) {
    const size_t k = static_cast<size_t>(rng() % (pts.size() - 100000));
    const Box box{pts[k].end_ns, pts[k + 99999].end_ns, 0, INT64_MAX};
    const BoxStats stats = w->points().box_stats(box);
    {
      QElapsedTimer t;
      t.start();
      Store s(path);
      box_rows = static_cast<int64_t>(s.query_box(box, stats.min_id, stats.max_id).size());
      box_base.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    QElapsedTimer t;
    t.start();
    w->selectBox(box);
    if (!wait_for(w.get(), &MainWindow::listFilled)) return 1;
    w->list()->view()->repaint();
    box_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    if (w->list()->model()->rowCount() != box_rows) {
      std::fprintf(stderr, "list has %d rows, the box %lld\n", w->list()->model()->rowCount(), static_cast<long long>(box_rows));
      return 1;
    }
  }
  char what[64];
  std::snprintf(what, sizeof what, "box of %lld dots -> list filled", static_cast<long long>(box_rows));
  report(what, median(box_ms), 300, "box query alone", median(box_base), box_ms);
  {
    // Sorting the list on a header click runs on the UI thread: how long for this many rows.
    std::vector<double> sort_ms;
    for (int run = 0; run < 4; ++run) {
      QElapsedTimer t;
      t.start();
      w->list()->view()->sortByColumn(run % 2 ? TransactionListModel::kResponse : TransactionListModel::kEnd,
                                      Qt::AscendingOrder);
      w->list()->view()->repaint();
      sort_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    std::printf("%-44s %8.1f ms  (no target; runs: %s)\n", "  list sort on a header click", median(sort_ms), runs(sort_ms).c_str());
  }

  // 3. profile opens: click (select) a row in the list -> steps painted
  std::vector<double> prof_ms, prof_base;
  for (int run = 0; run < 21; ++run) {
    const int row = static_cast<int>(rng() % static_cast<uint64_t>(w->list()->model()->rowCount()));
    const int64_t id = w->list()->model()->summary(row).id;
    {
      QElapsedTimer t;
      t.start();
      Store s(path);
      if (!s.load_profile(id)) return 1;
      prof_base.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    QElapsedTimer t;
    t.start();
    w->list()->selectRow(row);
    if (!wait_for(w.get(), &MainWindow::profileShown)) return 1;
    w->profile()->view()->repaint();
    prof_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  report("profile opens (list click -> steps painted)", median(prof_ms), 50, "profile query alone", median(prof_base), prof_ms);

  // 4. live mode, 2,000 transactions/s arriving: a writer thread appends 200 every 100 ms, with end times
  // continuing from the store's newest, so the 60-minute live window holds the store's dots too.
  w->scatter()->setLiveWindow(60LL * 60 * 1000000000);
  w->scatter()->setLive(true);
  w->setPollInterval(500);
  const int64_t first_new = rows + 1;
  const int64_t base_end = w->points().max_end();
  std::vector<double> live_max, idle_max, beats, live_cpu;
  std::atomic<int64_t> written{0};
  for (int run = 0; run < 3; ++run) {
    idle_max.push_back(longest_busy(3));
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      const auto catalog = txray::gen::Catalog::standard();
      txray::gen::StoreWriter out(path, catalog, txray::gen::StoreWriter::Mode::kAppend);
      txray::gen::Generator gen(catalog, 1000 + run, out.next_id());
      const auto start = std::chrono::steady_clock::now();
      std::vector<txray::gen::TxRow> group;
      for (int tick = 1; !stop; ++tick) {
        const int64_t at = base_end + std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
        int n = 0;
        while (n < 200) {
          group.clear();
          gen.generate(at + n * 500000, 1.0, group);
          for (const auto& tx : group) out.add(tx);
          n += static_cast<int>(group.size());
        }
        out.flush();
        written += n;
        std::this_thread::sleep_until(start + std::chrono::milliseconds(100 * tick));
      }
    });
    const size_t before = w->points().size();
    double cpu = 0;
    live_max.push_back(longest_busy(5, &beats, &cpu));
    live_cpu.push_back(cpu);
    stop = true;
    writer.join();
    QApplication::processEvents();
    if (w->points().size() <= before) {
      std::fprintf(stderr, "live mode received nothing\n");
      return 1;
    }
  }
  std::sort(beats.begin(), beats.end());
  report("live, 2,000 tx/s: longest UI-thread busy", median(live_max), 50, "idle viewer", median(idle_max), live_max);
  std::printf("%-44s %8.1f ms  (p99 of %zu heartbeats; %lld transactions arrived, %zu dots now shown)\n", "  live heartbeat p99 busy",
              beats.empty() ? 0.0 : beats[beats.size() * 99 / 100], beats.size(), static_cast<long long>(written.load()),
              w->points().size());
  std::printf("%-44s %s ms  (UI-thread CPU time inside each run's longest stretch; the rest is waiting for a core)\n",
              "  of which on the CPU", runs(live_cpu).c_str());
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) std::printf("%-44s %.1f (2 cores)\n", "  load average during the run", load[0]);
  w.reset();

  // Put the store back as it was.
  sqlite3* rw = nullptr;
  sqlite3_open(path.c_str(), &rw);
  sqlite3_busy_timeout(rw, 5000);
  const std::string del = "DELETE FROM steps WHERE tx_id >= " + std::to_string(first_new) +
                          "; DELETE FROM transactions WHERE id >= " + std::to_string(first_new) +
                          "; PRAGMA wal_checkpoint(TRUNCATE);";
  const int rc = sqlite3_exec(rw, del.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(rw);
  return rc == SQLITE_OK ? 0 : 1;
}
