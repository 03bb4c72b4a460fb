// Drag a box on the scatter with the mouse: the list holds exactly the transactions inside; its filters
// narrow it; a click on a dot opens that transaction's profile.
#include <QCheckBox>
#include <QWheelEvent>
#include <QHelpEvent>
#include <QToolTip>
#include <QTableView>
#include <QtTest>

#include <set>

#include "list_panel.h"
#include "profile_panel.h"
#include "store.h"
#include "store_fixture.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerSelect : public QObject {
  Q_OBJECT
  int64_t t0_ = 0;
  StoreFixture store_;

  // A 20 x 10 lattice: transaction id = i*10 + j + 1 ends at t0 + i*10 s and took (j+1)*100 ms;
  // every 7th one failed.
  static int64_t id_of(int i, int j) { return i * 10 + j + 1; }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    t0_ = now_ns() - 3600LL * 1000000000;  // an hour ago: a saved store, shown whole
    std::vector<TxSpec> txs;
    for (int i = 0; i < 20; ++i)
      for (int j = 0; j < 10; ++j) {
        TxSpec tx{id_of(i, j), j % 2 ? "shop" : "payments", "GET /item/" + std::to_string(j),
                  t0_ + i * 10000 * kMs, (j + 1) * 100 * kMs};
        if (id_of(i, j) % 7 == 0) {
          tx.status = 500;
          tx.error = "HTTP 500: boom";
        }
        txs.push_back(tx);
      }
    store_.insert(txs);
  }

  void dragBoxFillsTheListWithExactlyTheDotsInside() {
    MainWindow w(false);
    w.resize(1400, 900);
    QVERIFY(open_and_wait(w, store_.path()));
    QCOMPARE(w.points().size(), size_t(200));
    ScatterView* s = w.scatter();
    QVERIFY(!s->live());  // an hour-old store opens paused, fitted
    s->setTimeRange(t0_ - 10000 * kMs, t0_ + 200000 * kMs);
    s->ensureUpToDate();

    // Corners half-way between lattice points: columns 5..9, rows 2..5.
    const QPoint a = pixel_of(*s, t0_ + 45000 * kMs, 650 * kMs);
    const QPoint b = pixel_of(*s, t0_ + 95000 * kMs, 250 * kMs);
    QSignalSpy filled(&w, &MainWindow::listFilled);
    QTest::mousePress(s, Qt::LeftButton, {}, a);
    QTest::mouseMove(s, (a + b) / 2);
    QTest::mouseMove(s, b);
    QTest::mouseRelease(s, Qt::LeftButton, {}, b);
    QVERIFY(filled.wait(5000));

    std::set<int64_t> expected, got;
    for (int i = 5; i <= 9; ++i)
      for (int j = 2; j <= 5; ++j) expected.insert(id_of(i, j));
    auto* model = w.list()->model();
    for (int r = 0; r < model->rowCount(); ++r) got.insert(model->summary(r).id);
    QCOMPARE(got, expected);
    QCOMPARE(filled.takeFirst().at(0).toInt(), 20);
    QVERIFY(w.statusText().contains("box: 20 dots"));

    // A box with more dots than the list's cap lists the slowest ones.
    w.setMaxListRows(8);
    QSignalSpy capped(&w, &MainWindow::listFilled);
    w.selectBox(s->boxFromPixels(QRect(a, b).normalized()));
    QVERIFY(capped.wait(5000));
    got.clear();
    for (int r = 0; r < model->rowCount(); ++r) got.insert(model->summary(r).id);
    std::set<int64_t> slowest;
    for (int i = 5; i <= 9; ++i)
      for (int j = 4; j <= 5; ++j) slowest.insert(id_of(i, j));  // 500 and 600 ms: the 10 slowest (ties)
    QCOMPARE(got, slowest);
    QVERIFY2(w.statusText().contains("the slowest"), qPrintable(w.statusText()));
    w.setMaxListRows(200000);
    w.selectBox(s->boxFromPixels(QRect(a, b).normalized()));
    QVERIFY(capped.wait(5000));
    QCOMPARE(model->rowCount(), 20);

    // Errors only: the failed ones among them (ids divisible by 7).
    w.list()->findChild<QCheckBox*>("errorsOnly")->setChecked(true);
    std::set<int64_t> errors;
    for (int64_t id : expected)
      if (id % 7 == 0) errors.insert(id);
    got.clear();
    for (int r = 0; r < model->rowCount(); ++r) got.insert(model->summary(r).id);
    QCOMPARE(got, errors);
  }

  void clickOnADotOpensItsProfile() {
    MainWindow w(false);
    w.resize(1400, 900);
    QVERIFY(open_and_wait(w, store_.path()));
    ScatterView* s = w.scatter();
    s->setTimeRange(t0_ - 10000 * kMs, t0_ + 200000 * kMs);
    s->ensureUpToDate();
    // The tooltip names the dot under the mouse.
    const QPoint at = pixel_of(*s, t0_ + 30000 * kMs, 800 * kMs);
    QHelpEvent help(QEvent::ToolTip, at, s->mapToGlobal(at));
    QApplication::sendEvent(s, &help);
    QVERIFY2(QToolTip::text().contains("shop  GET /item/7"), qPrintable(QToolTip::text()));
    QVERIFY(QToolTip::text().contains("800 ms"));
    QVERIFY(QToolTip::text().contains(QString("#%1").arg(id_of(3, 7))));

    QSignalSpy shown(&w, &MainWindow::profileShown);
    QTest::mouseClick(s, Qt::LeftButton, {}, at);
    QVERIFY(shown.wait(5000));
    QCOMPARE(shown.takeFirst().at(0).toLongLong(), id_of(3, 7));
    QVERIFY(w.profile()->headerText().contains("GET /item/7"));
  }

  void aTxidOpensItsProfile() {
    // What `txray-viewer --txid HEX DB` does: the store id of that agent txid, then its profile.
    Store st(store_.path());
    QCOMPARE(st.find_txid(uint64_t(id_of(3, 7) * 7919)).value_or(-1), id_of(3, 7));  // the fixture's txids
    QVERIFY(!st.find_txid(1));
    MainWindow w(false);
    w.resize(1400, 900);
    QVERIFY(open_and_wait(w, store_.path()));
    QSignalSpy shown(&w, &MainWindow::profileShown);
    w.openTransaction(id_of(3, 7));
    QVERIFY(shown.wait(5000));
    QCOMPARE(shown.takeFirst().at(0).toLongLong(), id_of(3, 7));
    QVERIFY(w.profile()->headerText().contains("GET /item/7"));
  }

  void wheelZoomsAroundTheMouseAndRightDragPans() {
    MainWindow w(false);
    w.resize(1400, 900);
    QVERIFY(open_and_wait(w, store_.path()));
    ScatterView* s = w.scatter();
    s->setTimeRange(t0_, t0_ + 200000 * kMs);
    s->ensureUpToDate();
    const QPoint at = pixel_of(*s, t0_ + 50000 * kMs, 500 * kMs);
    const int64_t under = s->timeAxis().to_time(at.x());
    QWheelEvent wheel(at, s->mapToGlobal(at), {}, QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(s, &wheel);
    s->ensureUpToDate();
    const int64_t span = s->timeAxis().t1() - s->timeAxis().t0();
    QVERIFY(std::llabs(span - 160000 * kMs) < kMs);  // one notch = x0.8
    QVERIFY(std::llabs(s->timeAxis().to_time(at.x()) - under) < 1000 * kMs);
    const int64_t before = s->timeAxis().t0();
    QTest::mousePress(s, Qt::RightButton, {}, at);
    QMouseEvent move(QEvent::MouseMove, at + QPoint(100, 0), s->mapToGlobal(at + QPoint(100, 0)), Qt::NoButton,
                     Qt::RightButton, Qt::NoModifier);
    QApplication::sendEvent(s, &move);
    QTest::mouseRelease(s, Qt::RightButton, {}, at + QPoint(100, 0));
    s->ensureUpToDate();
    QVERIFY(s->timeAxis().t0() < before);  // dragged right: earlier times come into view
    QVERIFY(!s->live());
    s->setLogScale(true);
    s->ensureUpToDate();
    QVERIFY(s->valueAxis().log());
    const auto [first, last] = w.points().range(s->timeAxis().t0(), s->timeAxis().t1());
    QCOMPARE(s->grid().dots(), static_cast<int64_t>(last - first));
    QCOMPARE(s->grid().clipped_above(), int64_t(0));  // the automatic top fits every dot
  }

  void boxOverNothingEmptiesTheList() {
    MainWindow w(false);
    w.resize(1400, 900);
    QVERIFY(open_and_wait(w, store_.path()));
    ScatterView* s = w.scatter();
    s->setTimeRange(t0_ + 300000 * kMs, t0_ + 400000 * kMs);  // after the last dot
    s->ensureUpToDate();
    QSignalSpy filled(&w, &MainWindow::listFilled);
    const QRect p = s->plotRect();
    QTest::mousePress(s, Qt::LeftButton, {}, p.topLeft() + QPoint(20, 20));
    QTest::mouseRelease(s, Qt::LeftButton, {}, p.center());
    QVERIFY(filled.count() == 1 || filled.wait(5000));
    QCOMPARE(w.list()->model()->rowCount(), 0);
  }
};

QTEST_MAIN(TestViewerSelect)
#include "test_viewer_select.moc"
