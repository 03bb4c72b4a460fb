// Live mode: transactions inserted into the store while the window is open appear on the scatter (and
// in a box) without reopening; the window follows the newest ones.
#include <QtTest>

#include "density_grid.h"
#include "list_panel.h"
#include "store_fixture.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerLive : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void aFileThatIsNotAStoreIsReported() {
    QTemporaryDir dir;
    const QString path = dir.filePath("notes.db");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    MainWindow w(false);
    QSignalSpy failed(&w, &MainWindow::storeFailed);
    QSignalSpy loaded(&w, &MainWindow::loadFinished);
    w.show();
    w.openStore(path);
    QVERIFY(failed.wait(5000));
    QVERIFY(failed.at(0).at(0).toString().contains("not a txray store"));
    QVERIFY(loaded.count() == 1 || loaded.wait(5000));
    QVERIFY2(w.statusText().startsWith("Error: "), qPrintable(w.statusText()));
    QCOMPARE(w.points().size(), size_t(0));
  }

  void statusBarCountsUnattributedSteps() {
    StoreFixture store;
    const int64_t t = now_ns();
    store.insert({TxSpec{1, "front", "GET /r/1", t - 2000 * kMs, 5 * kMs},
                  unattributed_container(2, t - 1000 * kMs,
                                         {{"HTTP_CALL", -1, 1 * kMs, 1 * kMs, 0, 2 * kMs, "http://back/b/1"},
                                          {"SOCKET"}})});
    MainWindow w(false);
    w.resize(1200, 800);
    w.setPollInterval(50);
    QVERIFY(open_and_wait(w, store.path()));
    QCOMPARE(w.points().size(), size_t(1));  // the container is no dot
    QVERIFY2(w.statusText().contains("1 transactions  ·  2 unattributed steps"), qPrintable(w.statusText()));
    // A container stored while the window is open adds its steps.
    store.insert(unattributed_container(3, t, {{"HTTP_CALL", -1, 1 * kMs, 1 * kMs, 0, 2 * kMs, "http://back/b/2"}}));
    QTRY_VERIFY_WITH_TIMEOUT(w.statusText().contains("3 unattributed steps"), 5000);
    QCOMPARE(w.points().unattributed_by_kind(), (KindCounts{{"HTTP_CALL", 2}, {"SOCKET", 1}}));
    QCOMPARE(w.points().size(), size_t(1));
  }

  // Transactions shed by the collector or sampled out by agents (shed_counts) are in the count, never dots.
  void statusBarCountsShedTransactions() {
    StoreFixture store;
    const int64_t t = now_ns();
    store.insert({TxSpec{1, "front", "GET /r/1", t - 2000 * kMs, 5 * kMs}});
    const std::string minute = std::to_string(t / 60'000'000'000 * 60'000'000'000);
    store.exec("INSERT INTO shed_counts VALUES ('front', 'GET /r/1', 'http', " + minute + ", 'collector', 40, 7, 7000000)");
    MainWindow w(false);
    w.resize(1200, 800);
    w.setPollInterval(50);
    QVERIFY(open_and_wait(w, store.path()));
    QCOMPARE(w.points().size(), size_t(1));
    QTRY_VERIFY_WITH_TIMEOUT(w.statusText().contains("8 transactions (7 of them counted, not stored)"), 5000);
    // Counts that arrive while the window is open are added.
    store.exec("INSERT INTO shed_counts VALUES ('front', 'GET /r/1', 'http', " + minute + ", 'agent', 40, 3, 3000000)");
    QTRY_VERIFY_WITH_TIMEOUT(w.statusText().contains("11 transactions (10 of them counted, not stored)"), 5000);
    QCOMPARE(w.points().size(), size_t(1));
  }

  void newRowsAppearWhileOpen() {
    StoreFixture store;
    const int64_t t = now_ns();
    std::vector<TxSpec> first;
    for (int i = 1; i <= 10; ++i) first.push_back({i, "shop", "GET /a", t - 60000 * kMs + i * kMs, 5 * kMs});
    store.insert(first);

    MainWindow w(false);
    w.resize(1200, 800);
    w.setPollInterval(50);
    QVERIFY(open_and_wait(w, store.path()));
    ScatterView* s = w.scatter();
    QVERIFY(s->live());  // recent data: stays live
    QCOMPARE(w.points().size(), size_t(10));

    // A writer adds 50 transactions, later than everything shown, some slower.
    std::vector<TxSpec> more;
    for (int i = 11; i <= 60; ++i) more.push_back({i, "pay", "POST /b", t + i * kMs, (i % 5 + 1) * 40 * kMs});
    store.insert(more);
    QTRY_COMPARE_WITH_TIMEOUT(w.points().size(), size_t(60), 5000);
    QCOMPARE(w.points().last_id(), int64_t(60));
    QCOMPARE(w.points().apps().size(), size_t(2));

    s->ensureUpToDate();
    QCOMPARE(s->grid().dots(), int64_t(60));  // all inside the live window
    QVERIFY(s->timeAxis().t1() >= t + 60 * kMs);

    // A box over the whole view now lists all 60.
    QSignalSpy filled(&w, &MainWindow::listFilled);
    w.selectAllInView();
    QVERIFY(filled.wait(5000));
    QCOMPARE(w.list()->model()->rowCount(), 60);

    // Later rows far in the future scroll the live window: the first ten drop out of it.
    store.insert(TxSpec{61, "shop", "GET /a", t + 3600LL * 1000 * kMs, 5 * kMs});
    QTRY_COMPARE_WITH_TIMEOUT(w.points().size(), size_t(61), 5000);
    s->ensureUpToDate();
    QCOMPARE(s->grid().dots(), int64_t(1));
  }
};

QTEST_MAIN(TestViewerLive)
#include "test_viewer_live.moc"
