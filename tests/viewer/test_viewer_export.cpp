// File > Export report… writes `txray report` (collector/report) for the box on the scatter.
#include <QFile>
#include <QtTest>

#include "list_panel.h"
#include "store_fixture.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerExport : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void exportsTheBoxAsMarkdown() {
#ifndef TXRAY_VIEWER_HAS_REPORT
    QSKIP("built without collector/report");
#else
    StoreFixture store;
    const int64_t t = now_ns() - 3600LL * 1000 * kMs;
    std::vector<TxSpec> txs;
    for (int i = 1; i <= 40; ++i) txs.push_back({i, i % 2 ? "shop" : "pay", "GET /slow-" + std::to_string(i % 3), t + i * 1000 * kMs, i * 10 * kMs});
    store.insert(txs);
    MainWindow w(false);
    w.resize(1200, 800);
    QVERIFY(open_and_wait(w, store.path()));
    QSignalSpy filled(&w, &MainWindow::listFilled);
    w.selectBox(Box{t, t + 100000 * kMs, 200 * kMs, INT64_MAX});  // the 21 slowest (200..400 ms)
    QVERIFY(filled.wait(5000));
    QCOMPARE(w.list()->model()->rowCount(), 21);

    QTemporaryDir dir;
    const QString out = dir.filePath("report.md");
    QSignalSpy written(&w, &MainWindow::reportWritten);
    QVERIFY(w.exportReportTo(out));
    QVERIFY(written.wait(20000));
    QCOMPARE(written.at(0).at(1).toString(), QString());
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(f.readAll());
    QVERIFY2(md.contains("GET /slow-"), qPrintable(md.left(2000)));
    QVERIFY(md.size() > 200);
    QVERIFY(w.statusText().contains("Report written"));
#endif
  }
};

QTEST_MAIN(TestViewerExport)
#include "test_viewer_export.moc"
