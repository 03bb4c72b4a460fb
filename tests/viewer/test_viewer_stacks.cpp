// The stack of a failed or slow step (step_frames): the data layer loads it with its row, the profile
// pane's stack view shows it when that row is selected and nothing for a row without one, Copy prints it
// under the row; a store written before stacks (no step_frames table) still opens.
#include <QPlainTextEdit>
#include <QTableView>
#include <QtTest>

#include "profile_format.h"
#include "profile_panel.h"
#include "store.h"
#include "store_fixture.h"
#include "widget_helpers.h"

using namespace txray::viewer;
using namespace txray::test;

class TestViewerStacks : public QObject {
  Q_OBJECT
  StoreFixture store_;

 private slots:
  void initTestCase() {
    store_.insert(reference_tx(1, now_ns() - 3600LL * 1000000000, 2));
    // Row 1 (the HTTP_CALL) failed: its stack, innermost first.
    store_.exec(
        "INSERT INTO step_frames(tx_id, step_no, depth, function, module, offset) VALUES"
        " (1, 1, 0, 'txray::samples::HttpClient::request()', 'portal', 4660),"
        " (1, 1, 1, '(anonymous namespace)::call_backend(unsigned short)', 'portal', 8192),"
        " (1, 1, 2, NULL, 'libstripped.so', 255)");
  }

  void dataLayerLoadsTheStackWithItsRow() {
    Store s(store_.path());
    auto p = s.load_profile(1);
    QVERIFY(p);
    QCOMPARE(p->steps.size(), size_t(5));
    QCOMPARE(p->steps[1].stack.size(), size_t(3));
    // The short form is what a person reads; the full name stays in the data for the tooltip.
    QCOMPARE(frame_text(p->steps[1].stack[1]), std::string("(anonymous namespace)::call_backend(\u2026) (portal+0x2000)"));
    QCOMPARE(frame_text(p->steps[1].stack[1], true),
             std::string("(anonymous namespace)::call_backend(unsigned short) (portal+0x2000)"));
    QCOMPARE(frame_text(p->steps[1].stack[2]), std::string("libstripped.so+0xff"));
    QVERIFY(p->steps[2].stack.empty());
    const std::string text = profile_text(*p);
    const auto row = text.find("reports:8082/export/7");
    QVERIFY(row != std::string::npos);
    QVERIFY2(text.find("at txray::samples::HttpClient::request() (portal+0x1234)", row) != std::string::npos, text.c_str());
  }

  void selectingARowShowsItsStack() {
    Store s(store_.path());
    ProfilePanel panel;
    panel.resize(1200, 800);
    panel.setProfile(std::make_shared<const Profile>(*s.load_profile(1)));
    QVERIFY(panel.stackText().isEmpty());
    panel.view()->setCurrentIndex(panel.model()->index(1, 0));
    QVERIFY2(panel.stackText().contains(QString::fromUtf8("(anonymous namespace)::call_backend(\u2026) (portal+0x2000)")),
             qPrintable(panel.stackText()));
    QVERIFY2(panel.stackView()->toolTip().contains("(anonymous namespace)::call_backend(unsigned short) (portal+0x2000)"),
             qPrintable(panel.stackView()->toolTip()));
    QVERIFY(panel.stackText().startsWith("stack of row 1"));
    panel.view()->setCurrentIndex(panel.model()->index(2, 0));
    QVERIFY(panel.stackText().isEmpty());
    QVERIFY(!panel.stackView()->placeholderText().isEmpty());
  }

  void aStoreWithoutTheTableStillOpens() {
    StoreFixture old;
    old.insert(reference_tx(1, now_ns() - 3600LL * 1000000000, 2));
    old.exec("DROP TABLE step_frames");
    Store s(old.path());
    auto p = s.load_profile(1);
    QVERIFY(p);
    QVERIFY(p->steps[1].stack.empty());
  }
};

QTEST_MAIN(TestViewerStacks)
#include "test_viewer_stacks.moc"
