// The default layout gives the profile the room: at 1600x1000, with the CPU pane and the stack pane
// shown, at least 15 profile rows are visible; the split between rows, CPU samples and stack (and the
// main window's own splits) is remembered per user (QSettings).
#include <QSplitter>
#include <QTableView>
#include <QtTest>

#include "flame_view.h"
#include "main_window.h"
#include "profile_panel.h"

using namespace txray::viewer;

namespace {

ProfilePtr long_profile(int rows) {
  auto p = std::make_shared<Profile>();
  p->tx.id = 9;
  p->tx.name = "GET /page";
  p->tx.elapsed_ns = 900'000'000;
  p->cpu_samples = 40;
  for (int i = 0; i < rows; ++i) {
    Step s;
    s.no = i;
    s.kind = i == 0 ? "START" : i == rows - 1 ? "END" : "SQL";
    s.text = "SELECT 1";
    s.start_offset_ns = i * 1'000'000LL;
    p->steps.push_back(s);
  }
  p->steps[2].cpu_samples = 40;
  p->steps[2].hot = {{"deflate", "libz.so.1", 40}};
  p->steps[2].stack = {{"txray::samples::HttpReader::fill()", "relay", 0x10}};
  p->cpu_stacks = {{"main;handle;deflate", 40}};
  return p;
}

int visible_rows(QTableView* v) {
  int n = 0;
  const int h = v->viewport()->height();
  for (int r = 0; r < v->model()->rowCount(); ++r) {
    const int y = v->rowViewportPosition(r);
    if (y >= 0 && y + v->rowHeight(r) <= h) ++n;  // wholly visible
  }
  return n;
}

}  // namespace

class TestViewerLayout : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void fifteenProfileRowsAt1600x1000() {
    MainWindow w(false);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.profile()->setProfile(long_profile(30));
    w.profile()->view()->setCurrentIndex(w.profile()->model()->index(2, 0));  // stack and hot shown
    QCoreApplication::processEvents();
    QVERIFY(w.profile()->flameView()->isVisible());
    QVERIFY(!w.profile()->stackText().isEmpty());
    const int rows = visible_rows(w.profile()->view());
    qInfo("visible profile rows at 1600x1000: %d", rows);
    QVERIFY2(rows >= 15, qPrintable(QString::number(rows)));
    if (const QByteArray out = qgetenv("TXRAY_LAYOUT_SHOT"); !out.isEmpty()) w.grab().save(QString::fromLocal8Bit(out));
  }

  void theProfileSplitIsRemembered() {
    QSettings().clear();
    QList<int> chosen;
    {
      MainWindow w(true);
      w.resize(1600, 1000);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.profile()->setProfile(long_profile(30));
      QCoreApplication::processEvents();
      QSplitter* s = w.profile()->splitter();
      const QList<int> now = s->sizes();
      QCOMPARE(now.size(), 3);
      const int total = now[0] + now[1] + now[2];
      s->setSizes({total - 300, 200, 100});
      chosen = s->sizes();
      w.close();
    }
    MainWindow again(true);
    again.resize(1600, 1000);
    again.show();
    QVERIFY(QTest::qWaitForWindowExposed(&again));
    again.profile()->setProfile(long_profile(30));
    QCoreApplication::processEvents();
    QCOMPARE(again.profile()->splitter()->sizes(), chosen);
    QSettings().clear();
  }
};

QTEST_MAIN(TestViewerLayout)
#include "test_viewer_layout.moc"
