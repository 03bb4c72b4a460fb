// Two selections compared (issue 15): drag a box (the current group), Shift+drag a second one (the
// baseline); the Comparison tab shows collector/report's comparison of exactly those transactions, cell
// for cell, and a member line opens a representative transaction of each side side by side.
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QtTest>

#include "compare_panel.h"
#include "compute.h"
#include "profile_panel.h"
#include "render.h"
#include "store_fixture.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerCompare : public QObject {
  Q_OBJECT
  int64_t t0_ = 0;
  StoreFixture store_;

  static std::vector<std::vector<std::string>> cells(const QTableWidget* t) {
    std::vector<std::vector<std::string>> out;
    for (int r = 0; r < t->rowCount(); ++r) {
      std::vector<std::string> row;
      for (int c = 0; c < t->columnCount(); ++c) row.push_back(t->item(r, c) ? t->item(r, c)->text().toStdString() : "");
      out.push_back(row);
    }
    return out;
  }

  void drag(ScatterView* s, QPoint a, QPoint b, Qt::KeyboardModifiers mods) {
    QTest::mousePress(s, Qt::LeftButton, mods, a);
    QTest::mouseMove(s, (a + b) / 2);
    QTest::mouseMove(s, b);
    QTest::mouseRelease(s, Qt::LeftButton, mods, b);
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    t0_ = now_ns() - 3600LL * 1000000000;
    std::vector<TxSpec> txs;
    // Baseline, ids 1..20: 10 ms = SQL 3 ms + 7 ms gap with 4 ms CPU.
    for (int i = 0; i < 20; ++i)
      txs.push_back({i + 1, "shop", "GET /item", t0_ + i * 10000 * kMs, 10 * kMs, 4 * kMs, 200, "", "", 0,
                     {{"START"},
                      {"SQL", -1, 0, 0, 0, 3 * kMs, "SELECT * FROM items WHERE id = ?"},
                      {"END", -1, 10 * kMs, 7 * kMs, 4 * kMs}}});
    // Current, ids 21..40, 200 s later: 30 ms = SQL 9 ms + a new call of 12 ms + 9 ms gap with 4 ms CPU;
    // one of them fails with a new error.
    for (int i = 0; i < 20; ++i)
      txs.push_back({21 + i, "shop", "GET /item", t0_ + (400 + i * 10) * 1000 * kMs, 30 * kMs, 4 * kMs,
                     i == 5 ? 500 : 200, i == 5 ? "pricing down" : "", "", 0,
                     {{"START"},
                      {"SQL", -1, 0, 0, 0, 9 * kMs, "SELECT * FROM items WHERE id = ?"},
                      {"HTTP_CALL", -1, 9 * kMs, 0, 0, 12 * kMs, "GET http://pricing:8080/quote?id=1"},
                      {"END", -1, 30 * kMs, 9 * kMs, 4 * kMs}}});
    store_.insert(txs);
    // The fixture leaves the per-kind totals at 0; the collector fills them from the steps.
    store_.exec("UPDATE transactions SET "
                "sql_ns = (SELECT coalesce(sum(elapsed_ns), 0) FROM steps WHERE tx_id = transactions.id AND kind = 'SQL'), "
                "call_ns = (SELECT coalesce(sum(elapsed_ns), 0) FROM steps WHERE tx_id = transactions.id AND kind = 'HTTP_CALL')");
  }

  void twoBoxesShowTheReportsComparison() {
    MainWindow w(false);
    w.resize(1500, 1000);
    QVERIFY(open_and_wait(w, store_.path()));
    QCOMPARE(w.points().size(), size_t(40));
    ScatterView* s = w.scatter();
    s->setTimeRange(t0_ - 20000 * kMs, t0_ + 620000 * kMs);
    s->ensureUpToDate();

    QSignalSpy shown(&w, &MainWindow::comparisonShown);
    QSignalSpy examples(&w, &MainWindow::examplesShown);
    // The current group: the slow dots on the right.
    drag(s, pixel_of(*s, t0_ + 395000 * kMs, 40 * kMs), pixel_of(*s, t0_ + 610000 * kMs, 20 * kMs), {});
    // The baseline: Shift+drag around the fast dots on the left.
    drag(s, pixel_of(*s, t0_ - 5000 * kMs, 15 * kMs), pixel_of(*s, t0_ + 200000 * kMs, 5 * kMs), Qt::ShiftModifier);
    QVERIFY(shown.wait(10000));
    QCOMPARE(w.lowerTabs()->currentWidget(), w.comparePanel());
    QVERIFY(s->compareSelection().has_value());

    // The report library over exactly the two groups.
    txray::report::Options opt;
    opt.db = store_.path();
    opt.top = 30;
    for (int64_t id = 21; id <= 40; ++id) opt.tx_ids.push_back(id);
    opt.baseline = txray::report::Options::Baseline{};
    for (int64_t id = 1; id <= 20; ++id) opt.baseline->tx_ids.push_back(id);
    opt.compare_only = true;
    txray::report::Report r;
    QCOMPARE(QString::fromStdString(txray::report::compute_report(opt, r)), QString());
    const txray::report::CompareRows rows = txray::report::compare_rows(r);
    QCOMPARE(r.compare.baseline.transactions, int64_t(20));
    QCOMPARE(r.summary.transactions, int64_t(20));
    QCOMPARE(r.compare.difference_ns, 20.0 * kMs);

    ComparePanel* p = w.comparePanel();
    QCOMPARE(p->headline()->text().toStdString(), rows.headline);
    QCOMPARE(cells(p->summaryTable()), rows.summary.rows);
    QCOMPARE(cells(p->partsTable()), rows.parts.rows);
    QCOMPARE(cells(p->membersTable()), rows.members.rows);
    QCOMPARE(cells(p->changesTable()), rows.changes.rows);
    QCOMPARE(cells(p->stepsTable()), rows.steps.rows);

    // The figures themselves: +20 ms = call +12, SQL +6, waiting +2.
    auto m = cells(p->membersTable());
    QVERIFY(m.size() >= 3);
    QCOMPARE(m[0][1], std::string("Outbound calls"));
    QCOMPARE(m[0][2], std::string("pricing:8080/quote"));
    QCOMPARE(m[0][3], std::string("+12.00"));
    QCOMPARE(m[1][1], std::string("SQL"));
    QCOMPARE(m[1][3], std::string("+6.00"));
    QCOMPARE(m[1][6], std::string("1 × 3.00 ms → 1 × 9.00 ms"));
    QCOMPARE(m[2][1], std::string("Waiting"));
    QCOMPARE(m[2][3], std::string("+2.00"));
    auto parts = cells(p->partsTable());
    QCOMPARE(parts.back()[3], std::string("+20.00"));
    bool call = false, error = false;
    for (const auto& row : cells(p->changesTable())) {
      call |= row[0] == "appeared" && row[1] == "call target" && row[2] == "pricing:8080/quote";
      error |= row[0] == "appeared" && row[1] == "error" && row[2] == "pricing down";
    }
    QVERIFY(call);
    QVERIFY(error);

    // The first line's examples open side by side; then the SQL line's.
    if (examples.isEmpty()) QVERIFY(examples.wait(5000));
    auto base_id = [&] { return p->baselineProfile()->model()->profile()->tx.id; };
    auto cur_id = [&] { return p->currentProfile()->model()->profile()->tx.id; };
    QVERIFY(p->baselineProfile()->model()->profile());
    QVERIFY(p->currentProfile()->model()->profile());
    // The call is new: the baseline has no example of it, so its typical transaction stands in.
    QCOMPARE(r.compare.parts[0].base_example.id, int64_t(0));
    QCOMPARE(base_id(), r.compare.base_typical.id);
    QCOMPARE(cur_id(), r.compare.parts[0].cur_example.id);
    examples.clear();
    p->selectMember(1);
    QVERIFY(examples.wait(5000));
    QCOMPARE(base_id(), r.compare.parts[1].base_example.id);
    QCOMPARE(cur_id(), r.compare.parts[1].cur_example.id);
    QVERIFY(base_id() >= 1 && base_id() <= 20);
    QVERIFY(cur_id() >= 21 && cur_id() <= 40);

    // Edit > Compare with…: the next plain drag is the baseline.
    shown.clear();
    w.armCompare();
    QVERIFY(s->compareArmed());
    drag(s, pixel_of(*s, t0_ - 5000 * kMs, 15 * kMs), pixel_of(*s, t0_ + 100000 * kMs, 5 * kMs), {});
    QVERIFY(shown.wait(10000));
    QCOMPARE(p->comparison()->report.compare.baseline.transactions, int64_t(11));
    // A new current box drops the baseline box.
    drag(s, pixel_of(*s, t0_ + 395000 * kMs, 40 * kMs), pixel_of(*s, t0_ + 610000 * kMs, 20 * kMs), {});
    QVERIFY(!s->compareSelection().has_value());
  }
};

QTEST_MAIN(TestViewerCompare)
#include "test_viewer_compare.moc"
