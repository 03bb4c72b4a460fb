// Click a row of the list: the profile shows its steps in the X-View layout; the timeline makes the long
// CPU-bound gap after the socket read stand out; Copy gives the text; a call opens its callee; Back.
#include <QClipboard>
#include <QGuiApplication>
#include <QTableView>
#include <QtTest>

#include "list_panel.h"
#include "profile_panel.h"
#include "store_fixture.h"
#include "timeline_delegate.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerProfile : public QObject {
  Q_OBJECT
  StoreFixture store_;

  static QColor pixel(QTableView* view, const QImage& img, int row, double fraction, bool call_bar) {
    const QRect cell = view->visualRect(view->model()->index(row, ProfileModel::kTimeline));
    const QRectF r = QRectF(cell).adjusted(4, 2, -4, -2);
    const double y = call_bar ? r.bottom() - 1 : r.top() + 2;
    return img.pixelColor(static_cast<int>(r.left() + fraction * r.width()), static_cast<int>(y));
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    const int64_t end = now_ns() - 7200LL * 1000000000;
    TxSpec callee{2, "reports", "GET /export/{id}", end - 20 * kMs, 2900 * kMs};
    callee.trace_id = "0123456789abcdef0123456789abcdef";
    callee.parent_span_id = 777;
    store_.insert({reference_tx(1, end, 2), callee, TxSpec{3, "shop", "GET /cart", end - 500 * kMs, 12 * kMs}});
  }

  void clickRowShowsProfileTimelineAndCallee() {
    MainWindow w(false);
    w.resize(1500, 950);
    QVERIFY(open_and_wait(w, store_.path()));
    QSignalSpy filled(&w, &MainWindow::listFilled);
    w.selectAllInView();
    QVERIFY(filled.wait(5000));
    QCOMPARE(w.list()->model()->rowCount(), 3);

    // Click the reference transaction's row in the list.
    QTableView* list = w.list()->view();
    const int row = w.list()->model()->rowOf(1);
    QVERIFY(row >= 0);
    QSignalSpy shown(&w, &MainWindow::profileShown);
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(w.list()->model()->index(row, 2)).center());
    QVERIFY(shown.wait(5000));
    QCOMPARE(shown.takeFirst().at(0).toLongLong(), 1);

    ProfilePanel* p = w.profile();
    QTableView* steps = p->view();
    QCOMPARE(steps->model()->rowCount(), 5);
    QCOMPARE(steps->model()->index(4, ProfileModel::kGap).data().toString(), QStringLiteral("1,464"));
    QCOMPARE(steps->model()->index(4, ProfileModel::kCpu).data().toString(), QStringLiteral("1,356"));
    QCOMPARE(steps->model()->index(2, ProfileModel::kMessage).data().toString(),
             QStringLiteral("    SOCKET[addr=192.168.50.2,port=8005,localport=13192] uid=000000000207dd63"));
    QVERIFY(p->headerText().contains("GET /reports/{id}"));
    QVERIFY(p->headerText().contains("RESPONSE      2,942 ms   CPU 1,356 ms"));
    QVERIFY(w.statusText().contains("selected #1"));

    // Timeline: the END row's gap (after the socket read, 50 %..100 % of the axis) is 92 % CPU: orange
    // over most of it; the SOCKET_CLOSE row's gap (waiting for the response) is grey, no CPU; the call
    // row has its blue duration bar.
    QTest::qWait(50);
    const QImage img = steps->viewport()->grab().toImage();
    QCOMPARE(pixel(steps, img, 4, 0.70, false), TimelineDelegate::kCpuColor);
    QCOMPARE(pixel(steps, img, 3, 0.25, false), TimelineDelegate::kGapColor);
    QCOMPARE(pixel(steps, img, 1, 0.50, true), TimelineDelegate::kCallColor);
    QVERIFY(pixel(steps, img, 0, 0.50, false) != TimelineDelegate::kCpuColor);

    // Copy profile as text.
    p->copyToClipboard();
    const QString text = QGuiApplication::clipboard()->text();
    QVERIFY2(text.contains("TOTAL[2,942][1,356]"), qPrintable(text));
    QVERIFY(text.contains("SOCKET-CLOSE R=51,612,W=222,uid=000000000207dd63"));

    // A click on the HTTP_CALL row opens the callee; Back returns.
    QTest::mouseClick(steps->viewport(), Qt::LeftButton, {},
                      steps->visualRect(steps->model()->index(1, ProfileModel::kMessage)).center());
    QVERIFY(shown.wait(5000));
    QCOMPARE(shown.takeFirst().at(0).toLongLong(), 2);
    QVERIFY(p->headerText().contains("GET /export/{id}"));
    QVERIFY(p->headerText().contains("CALLED BY     #1"));
    emit p->backRequested();
    QVERIFY(shown.wait(5000));
    QCOMPARE(shown.takeFirst().at(0).toLongLong(), 1);
  }
};

QTEST_MAIN(TestViewerProfile)
#include "test_viewer_profile.moc"
