// Store queries on stores with known content: explicit inserts, and one made by gen_store's generator.
#include <QtTest>

#include <set>

#include "loader.h"
#include "point_set.h"
#include "profile_format.h"
#include "store.h"
#include "store_fixture.h"
#ifdef TXRAY_HAVE_GEN
#include "gen_model.h"
#include "store_writer.h"
#endif

using namespace txray::viewer;
using txray::test::kMs;
using txray::test::StoreFixture;
using txray::test::TxSpec;

namespace {
constexpr int64_t kT0 = 1800000000LL * 1000000000LL;  // 2027-01-15, a fixed clock for the tests
}

class TestViewerStore : public QObject {
  Q_OBJECT
 private slots:
  void rejectsFilesThatAreNotStores() {
    QTemporaryDir dir;
    const std::string missing = dir.filePath("nope.db").toStdString();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, Store{missing});
    const QString text = dir.filePath("text.db");
    QFile f(text);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not sqlite at all, not even close; padding padding padding padding padding padding");
    f.close();
    try {
      Store s(text.toStdString());
      QFAIL("opened a text file");
    } catch (const std::runtime_error& e) {
      QVERIFY(QString(e.what()).contains("not a txray store"));
    }
  }

  void loadsPointsInIdOrderWithDictionaries() {
    StoreFixture f;
    f.insert({{1, "shop", "GET /a", kT0 + 1000 * kMs, 10 * kMs},
              {2, "shop", "GET /b", kT0 + 2000 * kMs, 20 * kMs, 0, 500, "boom"},
              {3, "pay", "POST /c", kT0 + 3000 * kMs, 30 * kMs, 0, 503},
              {4, "shop", "GET /a", kT0 + 4000 * kMs, 40 * kMs}});
    Store s(f.path());
    QCOMPARE(s.count(), int64_t(4));
    PointBatch b = s.load_points(0, 3);
    QCOMPARE(b.points.size(), size_t(3));
    QVERIFY(b.more);
    QCOMPARE(b.last_id, int64_t(3));
    QCOMPARE(b.points[1].error, uint8_t(1));  // error text
    QCOMPARE(b.points[2].error, uint8_t(1));  // status 503
    QCOMPARE(b.points[0].error, uint8_t(0));
    QCOMPARE(b.apps, (std::vector<std::string>{"shop", "pay"}));
    QCOMPARE(b.points[2].app, uint8_t(1));
    PointBatch rest = s.load_points(b.last_id, 3);
    QCOMPARE(rest.points.size(), size_t(1));
    QVERIFY(!rest.more);
    QCOMPARE(rest.points[0].name, b.points[0].name);  // same name, same index
    QCOMPARE(s.load_points(4, 10).points.size(), size_t(0));
  }

  void containersOfUnattributedStepsGiveNoDotsButTheirStepsCount() {
    StoreFixture f;
    f.insert({{1, "front", "GET /r/1", kT0 + 1000 * kMs, 10 * kMs},
              txray::test::unattributed_container(2, kT0 + 2000 * kMs,
                                                  {{"HTTP_CALL", -1, 1 * kMs, 1 * kMs, 0, 2 * kMs, "http://back/b/1"},
                                                   {"SOCKET"},
                                                   {"HTTP_CALL", -1, 5 * kMs, 4 * kMs, 0, 2 * kMs, "http://back/b/2"}}),
              {3, "front", "GET /r/3", kT0 + 3000 * kMs, 10 * kMs},
              txray::test::unattributed_container(4, kT0 + 4000 * kMs, {{"DNS", -1, 0, 0, 0, 0, "back"}})});
    // Calls folded past the step limit count too.
    f.exec("INSERT INTO step_summaries(tx_id, kind, count, elapsed_ns) VALUES (4, 'HTTP_CALL', 40, 1000)");
    Store s(f.path());
    QCOMPARE(s.count(), int64_t(2));
    PointBatch b = s.load_points(0, 3);  // three rows: two dots, one container
    QCOMPARE(b.points.size(), size_t(2));
    QCOMPARE(b.points[1].id, int64_t(3));
    QVERIFY(b.more);
    QCOMPARE(b.unattributed, (KindCounts{{"HTTP_CALL", 2}, {"SOCKET", 1}}));
    PointBatch rest = s.load_points(b.last_id, 3);
    QCOMPARE(rest.points.size(), size_t(0));
    QCOMPARE(rest.last_id, int64_t(4));  // polling goes on after the container
    QVERIFY(!rest.more);
    QCOMPARE(rest.unattributed, (KindCounts{{"DNS", 1}, {"HTTP_CALL", 40}}));
    PointSet ps;
    ps.append(b);
    ps.append(rest);
    QCOMPARE(ps.size(), size_t(2));
    QCOMPARE(ps.unattributed_steps(), int64_t(44));
    // A box around everything lists the transactions only.
    const auto rows = s.query_box({kT0, kT0 + 5000 * kMs, 0, 10000 * kMs}, 1, 4);
    QCOMPARE(rows.size(), size_t(2));
    QCOMPARE(rows[1].id, int64_t(3));
  }

  // The first load in two halves (two threads) counts the containers of both halves, also when a half
  // holds containers only.
  void loadInTwoHalvesCountsTheContainersOfBoth() {
    for (const bool upper_only_containers : {false, true}) {
      StoreFixture f;
      std::vector<TxSpec> rows;
      for (int i = 1; i <= 200; ++i) {
        const bool container = i % 10 == 0 || (upper_only_containers && i > 100);
        rows.push_back(container ? txray::test::unattributed_container(i, kT0 + i * kMs, {{"HTTP_CALL"}, {"DNS"}})
                                 : TxSpec{i, "shop", "GET /a", kT0 + i * kMs, kMs});
      }
      f.insert(rows);
      const int64_t dots = upper_only_containers ? 90 : 180, containers = 200 - dots;
      Loader::parallel_from = 100;
      Loader loader;
      PointSet merged;
      connect(&loader, &Loader::pointsLoaded, this, [&](const PointBatchPtr& b) { merged.append(*b); });
      loader.open(QString::fromStdString(f.path()));
      loader.poll();
      Loader::parallel_from = 300000;
      QCOMPARE(static_cast<int64_t>(merged.size()), dots);
      QCOMPARE(merged.unattributed_steps(), 2 * containers);
      QCOMPARE(merged.unattributed_by_kind(), (KindCounts{{"DNS", containers}, {"HTTP_CALL", containers}}));
      QCOMPARE(merged.last_id(), int64_t(200));
    }
  }

  void boxQueryReturnsExactlyTheRowsInside() {
    StoreFixture f;
    std::vector<TxSpec> txs;
    for (int i = 1; i <= 100; ++i) txs.push_back({i, "shop", "GET /x", kT0 + i * 1000 * kMs, i * kMs});
    f.insert(txs);
    Store s(f.path());
    const Box box{kT0 + 10 * 1000 * kMs, kT0 + 50 * 1000 * kMs, 20 * kMs, 30 * kMs};
    const auto rows = s.query_box(box, 1, 100);
    std::set<int64_t> ids;
    for (const auto& r : rows) ids.insert(r.id);
    std::set<int64_t> expected;
    for (int i = 20; i <= 30; ++i) expected.insert(i);
    QCOMPARE(ids, expected);
    QCOMPARE(rows.front().client, std::string("10.0.0.1:5000"));
    QCOMPARE(s.query_box(box, 25, 100).size(), size_t(6));  // the id range narrows it
  }

  void profileHasStepsDepthAndLinks() {
    StoreFixture f;
    TxSpec callee{2, "reports", "GET /export/{id}", kT0 + 2900 * kMs, 2900 * kMs};
    callee.trace_id = "0123456789abcdef0123456789abcdef";
    callee.parent_span_id = 777;
    f.insert({txray::test::reference_tx(1, kT0 + 2942 * kMs, 2), callee});
    Store s(f.path());
    auto p = s.load_profile(1);
    QVERIFY(p);
    QCOMPARE(p->steps.size(), size_t(5));
    QCOMPARE(p->steps[2].depth, 1);
    QCOMPARE(p->steps[4].depth, 0);
    QCOMPARE(p->steps[1].text, std::string("http://reports:8082/export/7"));
    QCOMPARE(*p->steps[1].callee_tx_id, int64_t(2));
    QCOMPARE(p->host, std::string("test-host"));
    int64_t gaps = 0, cpu = 0;
    for (const auto& st : p->steps) {
      gaps += st.gap_ns;
      cpu += st.cpu_ns;
    }
    QCOMPARE(gaps, p->tx.elapsed_ns);
    QCOMPARE(cpu, p->tx.cpu_ns);
    const QString text = QString::fromStdString(profile_text(*p));
    QVERIFY2(text.contains("SOCKET-CLOSE R=51,612,W=222,uid=000000000207dd63"), qPrintable(text));
    QVERIFY2(text.contains("[ 1,464][ 1,356] END"), qPrintable(text));
    QVERIFY(text.contains("TOTAL[2,942][1,356]"));
    // The callee knows its caller through the trace and the call's span id.
    auto c = s.load_profile(2);
    QVERIFY(c);
    QVERIFY(c->caller_tx_id);
    QCOMPARE(*c->caller_tx_id, int64_t(1));
    QVERIFY(!s.load_profile(99));
  }

  void profileHeaderShowsTheAgentCostAndItsApplicationsMean() {
    StoreFixture f;
    f.insert({TxSpec{1, "shop", "GET /a", kT0, 2 * kMs}, TxSpec{2, "shop", "GET /b", kT0 + kMs, 1 * kMs},
              TxSpec{3, "api", "GET /c", kT0 + 2 * kMs, 1 * kMs}, TxSpec{4, "shop", "GET /d", kT0 + 3 * kMs, kMs}});
    // 2.1 us of 2 ms, 3.9 us of 1 ms; #3 (another application) and #4 (no figure) count for nobody.
    f.exec("INSERT INTO agent_cost(tx_id, cost_ns, agent_thread_ns) VALUES (1, 2100, 400), (2, 3900, 500), (3, 99000, 0)");
    Store s(f.path());
    auto p = s.load_profile(1);
    QVERIFY(p);
    QCOMPARE(p->agent_cost_ns.value_or(-1), 2100);
    QVERIFY(p->app_agent_cost);
    QCOMPARE(p->app_agent_cost->transactions, 2);
    const std::string h = profile_header(*p);
    QVERIFY2(h.find("AGENT COST    2.1 µs (0.1%)   shop mean 3.0 µs (0.2%) over 2\n") != std::string::npos, h.c_str());
    auto none = s.load_profile(4);
    QVERIFY(none);
    QVERIFY(!none->agent_cost_ns);
    QVERIFY(profile_header(*none).find("AGENT COST") == std::string::npos);
    // A store from before the table: no figure, no error.
    f.exec("DROP TABLE agent_cost");
    Store old(f.path());
    auto q = old.load_profile(1);
    QVERIFY(q);
    QVERIFY(!q->agent_cost_ns);
  }

  void profileHeaderSaysWhenValuesWereKeptRaw() {
    StoreFixture f;
    f.insert({TxSpec{1, "shop", "GET /a", kT0, kMs}, TxSpec{2, "shop", "GET /b", kT0 + kMs, kMs}});
    f.exec("UPDATE transactions SET attributes = '{\"query\":\"q=secret\",\"values\":\"raw\"}' WHERE id = 1");
    Store s(f.path());
    auto raw = s.load_profile(1);
    QVERIFY(raw);
    const std::string h = profile_header(*raw);
    QVERIFY2(h.find("VALUES        raw") != std::string::npos, h.c_str());
    auto masked = s.load_profile(2);
    QVERIFY(masked);
    QVERIFY(profile_header(*masked).find("VALUES") == std::string::npos);
  }

  void readsWhileAWriterHoldsTheStoreInWal() {
    StoreFixture f;
    f.insert({1, "shop", "GET /a", kT0, kMs});
    Store s(f.path());
    QCOMPARE(s.load_points(0, 10).points.size(), size_t(1));
    sqlite3_exec(f.db(), "BEGIN", nullptr, nullptr, nullptr);  // a writer mid-transaction
    sqlite3_exec(f.db(), "UPDATE transactions SET name = 'x'", nullptr, nullptr, nullptr);
    QCOMPARE(s.load_points(0, 10).points.size(), size_t(1));  // readers are not blocked in WAL
    sqlite3_exec(f.db(), "COMMIT", nullptr, nullptr, nullptr);
    f.insert({2, "shop", "GET /b", kT0 + kMs, kMs});
    QCOMPARE(s.load_points(1, 10).points.size(), size_t(1));
  }

#ifdef TXRAY_HAVE_GEN
  void generatedStoreIsConsistent() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("gen.db").toStdString();
    {
      const auto catalog = txray::gen::Catalog::standard();
      txray::gen::StoreWriter w(path, catalog, txray::gen::StoreWriter::Mode::kBulk);
      txray::gen::Generator g(catalog, 7, w.next_id());
      std::vector<txray::gen::TxRow> group;
      for (int i = 0; g.next_id() <= 3000; ++i) {
        group.clear();
        g.generate(kT0 + i * 100 * kMs, 1.0, group);
        for (const auto& tx : group) w.add(tx);
      }
      w.close();
    }
    Store s(path);
    const int64_t n = s.count();
    QVERIFY(n >= 3000);
    const PointBatch all = s.load_points(0, 1000000);
    QCOMPARE(static_cast<int64_t>(all.points.size()), n);
    QVERIFY(all.apps.size() == 5);
    int with_callee = 0;
    for (int64_t id = 1; id <= 300; ++id) {
      auto p = s.load_profile(id);
      QVERIFY(p);
      int64_t gaps = 0, cpu = 0;
      for (const auto& st : p->steps) {
        gaps += st.gap_ns;
        cpu += st.cpu_ns;
        QVERIFY(st.cpu_ns <= st.gap_ns);
        if (st.callee_tx_id) {
          ++with_callee;
          auto c = s.load_profile(*st.callee_tx_id);
          QVERIFY(c && c->caller_tx_id && *c->caller_tx_id == id);
          QVERIFY(c->start_ns >= p->start_ns + st.start_offset_ns);
          QVERIFY(c->tx.end_ns <= p->start_ns + st.start_offset_ns + st.elapsed_ns);
        }
      }
      QCOMPARE(gaps, p->tx.elapsed_ns);
      QCOMPARE(cpu, p->tx.cpu_ns);
    }
    QVERIFY(with_callee > 0);
    const auto rows = s.query_box(Box{0, INT64_MAX, 0, INT64_MAX}, 1, n);
    QCOMPARE(static_cast<int64_t>(rows.size()), n);

    // The first load in two halves (two threads, two dictionaries) gives the same dots, names and apps
    // as one serial read.
    Loader::parallel_from = 100;
    Loader loader;
    PointSet merged;
    int batches = 0;
    connect(&loader, &Loader::pointsLoaded, this, [&](const PointBatchPtr& b) {
      merged.append(*b);
      ++batches;
    });
    loader.open(QString::fromStdString(path));
    loader.poll();
    Loader::parallel_from = 300000;
    QVERIFY(batches >= 2);
    QCOMPARE(static_cast<int64_t>(merged.size()), n);
    QCOMPARE(merged.last_id(), n);
    std::map<int64_t, TxPoint> serial;
    for (const auto& p : all.points) serial[p.id] = p;
    for (const auto& p : merged.points()) {
      const TxPoint& q = serial.at(p.id);
      QCOMPARE(p.end_ns, q.end_ns);
      QCOMPARE(merged.apps()[p.app], all.apps[q.app]);
      QCOMPARE(merged.names()[p.name], all.names[q.name]);
    }
  }
#endif
};

QTEST_GUILESS_MAIN(TestViewerStore)
#include "test_viewer_store.moc"
