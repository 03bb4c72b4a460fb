// CPU samples in the viewer (issue 11): the flame graph's layout (data/flame_graph.h), the flame view's
// hit testing and painting, and the profile pane's hot functions of the selected row.
#include <QTableView>
#include <QtTest>

#include "flame_graph.h"
#include "flame_view.h"
#include "profile_panel.h"

using namespace txray::viewer;

namespace {

const FlameBox* find(const std::vector<FlameBox>& boxes, const std::string& name, int depth) {
  for (const auto& b : boxes)
    if (b.name == name && b.depth == depth) return &b;
  return nullptr;
}

ProfilePtr sampled_profile() {
  auto p = std::make_shared<Profile>();
  p->tx.id = 7;
  p->tx.name = "GET /page";
  p->tx.elapsed_ns = 400'000'000;
  p->cpu_samples = 40;
  p->cpu_sampler = "signal 61, every 10000 us of thread CPU";
  for (int i = 0; i < 4; ++i) {
    Step s;
    s.no = i;
    s.kind = i == 0 ? "START" : i == 3 ? "END" : "SOCKET_CLOSE";
    p->steps.push_back(s);
  }
  p->steps[1].cpu_samples = 4;
  p->steps[1].hot = {{"inflate", "libz.so.1", 4}};
  p->steps[3].cpu_samples = 36;
  p->steps[3].hot = {{"deflate", "libz.so.1", 30}, {"memcpy", "libc.so.6", 6}};
  p->cpu_stacks = {{"main;handle;gzip_compress;deflate", 30}, {"main;handle;memcpy", 6}, {"main;gunzip;inflate", 4}};
  return p;
}

}  // namespace

class TestViewerCpu : public QObject {
  Q_OBJECT
 private slots:
  void layoutMergesFramesAndSplitsWidthBySamples() {
    auto boxes = flame_layout({{"a;b;c", 3}, {"a;b", 1}, {"a;d", 2}});
    QCOMPARE(boxes.front().name, std::string("all"));
    QCOMPARE(boxes.front().samples, int64_t(6));
    const FlameBox* a = find(boxes, "a", 1);
    const FlameBox* b = find(boxes, "b", 2);
    const FlameBox* c = find(boxes, "c", 3);
    const FlameBox* d = find(boxes, "d", 2);
    QVERIFY(a && b && c && d);
    QCOMPARE(a->samples, int64_t(6));
    QCOMPARE(b->samples, int64_t(4));
    QVERIFY(qFuzzyCompare(b->x1 - b->x0, 4.0 / 6));
    QVERIFY(qFuzzyCompare(d->x0, 4.0 / 6));  // children by name: b before d
    QVERIFY(qFuzzyCompare(c->x1 - c->x0 + 1, 3.0 / 6 + 1));
    QCOMPARE(c->x0, b->x0);
    // Frames narrower than min_width are left out with everything above them.
    auto pruned = flame_layout({{"a;b;c", 3}, {"a;b", 1}, {"a;d", 2}}, 0.4);
    QVERIFY(!find(pruned, "d", 2));
    QVERIFY(find(pruned, "c", 3));
    QVERIFY(flame_layout({}).empty());
  }

  void hotFunctionsText() {
    auto p = sampled_profile();
    QCOMPARE(hot_functions_text(p->steps[3]),
             std::string(" 83%  deflate  (libz.so.1)  30 samples\n 17%  memcpy  (libc.so.6)  6 samples\n"));
    QCOMPARE(hot_functions_text(p->steps[0]), std::string());
  }

  void flameViewPaintsAndFindsFrames() {
    FlameView v;
    v.resize(600, 200);
    v.setStacks(sampled_profile()->cpu_stacks);
    QImage img = v.grab().toImage();
    QVERIFY(!img.isNull());
    // The root spans the bottom row; deflate sits four rows up, right of gunzip (30 of 40 samples).
    const FlameBox* root = v.boxAt(QPoint(300, 200 - 8));
    QVERIFY(root);
    QCOMPARE(root->name, std::string("all"));
    const FlameBox* top = v.boxAt(QPoint(300, 200 - 1 - 4 * 17 - 8));  // "gunzip" (4 samples) comes first
    QVERIFY(top);
    QCOMPARE(top->name, std::string("deflate"));
    QVERIFY(img.pixelColor(300, 200 - 1 - 4 * 17 - 8) != img.pixelColor(590, 5));  // painted, not background
  }

  void profilePaneShowsTheSelectedRowsHotFunctions() {
    ProfilePanel panel;
    panel.resize(1000, 800);
    panel.show();
    panel.setProfile(sampled_profile());
    // Nothing selected: the row with the most samples.
    QVERIFY2(panel.hotText().contains("row 3 (36 samples"), qPrintable(panel.hotText()));
    QVERIFY(panel.hotText().contains("deflate"));
    QCOMPARE(panel.flameView()->boxes().front().samples, int64_t(40));
    panel.view()->selectRow(1);
    QVERIFY2(panel.hotText().contains("inflate"), qPrintable(panel.hotText()));
    panel.view()->selectRow(2);
    QVERIFY(panel.hotText().contains("no CPU samples"));
    // A transaction without samples hides the CPU pane.
    auto bare = std::make_shared<Profile>(*sampled_profile());
    bare->cpu_samples = 0;
    bare->cpu_stacks.clear();
    panel.setProfile(bare);
    QVERIFY(panel.flameView()->boxes().empty());
  }
};

QTEST_MAIN(TestViewerCpu)
#include "test_viewer_cpu.moc"
