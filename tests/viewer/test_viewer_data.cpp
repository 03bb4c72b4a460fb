// The data layer alone: time/value <-> pixel mapping, ticks, the point set, density bucketing, and the
// profile's text and timeline geometry.
#include <QtTest>

#include "axis.h"
#include "density_grid.h"
#include "point_set.h"
#include "profile_format.h"

using namespace txray::viewer;

namespace {
constexpr int64_t kS = 1000000000, kMs = 1000000;

PointBatch batch(std::vector<TxPoint> pts) {
  PointBatch b;
  b.points = std::move(pts);
  b.apps = {"a", "b"};
  b.names = {"n"};
  for (const auto& p : b.points) b.last_id = std::max(b.last_id, p.id);
  return b;
}
}  // namespace

class TestViewerData : public QObject {
  Q_OBJECT
 private slots:
  void timeAxisMapsBothWays_data() {
    QTest::addColumn<qint64>("t");
    QTest::addColumn<double>("x");
    QTest::newRow("left edge") << qint64(1000 * kS) << 100.0;
    QTest::newRow("middle") << qint64(1030 * kS) << 400.0;
    QTest::newRow("right edge") << qint64(1060 * kS) << 700.0;
    QTest::newRow("before") << qint64(990 * kS) << 0.0;
  }
  void timeAxisMapsBothWays() {
    QFETCH(qint64, t);
    QFETCH(double, x);
    const TimeAxis a(1000 * kS, 1060 * kS, 100, 700);
    QCOMPARE(a.to_x(t), x);
    QCOMPARE(a.to_time(x), t);
  }
  void zoomKeepsTheTimeUnderTheMouse() {
    const TimeAxis a(0, 600 * kS, 0, 600);
    const TimeAxis z = a.zoomed(150, 0.5);
    QCOMPARE(z.t1() - z.t0(), 300 * kS);
    QVERIFY(std::llabs(z.to_time(150) - a.to_time(150)) <= 1);
    const TimeAxis p = a.panned(60);  // dragging right shows earlier times
    QCOMPARE(p.t0(), -60 * kS);
  }
  void valueAxisLinearAndLog() {
    const ValueAxis lin(0, 1000 * kMs, 500, 100, false);
    QCOMPARE(lin.to_y(0), 500.0);
    QCOMPARE(lin.to_y(1000 * kMs), 100.0);
    QCOMPARE(lin.to_y(500 * kMs), 300.0);
    QCOMPARE(lin.to_value(300), 500 * kMs);
    const ValueAxis log(1 * kMs, 1000 * kMs, 400, 100, true);
    QCOMPARE(log.to_y(1 * kMs), 400.0);
    QVERIFY(std::abs(log.to_y(10 * kMs) - 300.0) < 1e-6);  // one decade = a third of the height
    QVERIFY(std::abs(log.to_y(100 * kMs) - 200.0) < 1e-6);
    QCOMPARE(log.to_y(0), 400.0);  // below the floor: on the bottom
    QVERIFY(std::llabs(log.to_value(200) - 100 * kMs) < 10);
  }
  void ticksAreRoundAndInside() {
    const auto v = value_ticks(0, 1000 * kMs, false, 5);
    QVERIFY(!v.empty());
    for (const auto& t : v) {
      QVERIFY(t.value % (200 * kMs) == 0);
      QVERIFY(t.value <= 1000 * kMs);
    }
    QCOMPARE(QString::fromStdString(v.back().label), QStringLiteral("1 s"));
    const auto lg = value_ticks(1 * kMs, 10 * kS, true, 10);
    QCOMPARE(lg.size(), size_t(5));  // 1 ms, 10 ms, 100 ms, 1 s, 10 s
    const auto tt = time_ticks(1000 * kS, 1600 * kS, 6);
    QVERIFY(tt.size() >= 2 && tt.size() <= 7);
    for (const auto& t : tt) QVERIFY(t.value >= 1000 * kS && t.value <= 1600 * kS);
    QCOMPARE(tt[1].value - tt[0].value, 300 * kS);  // 10 min / 6 ticks -> 5 min steps
  }
  void pointSetKeepsEndOrderAcrossBatches() {
    PointSet s;
    s.append(batch({{10 * kS, kMs, 1, 0, 0, 0}, {20 * kS, kMs, 2, 0, 0, 0}, {30 * kS, kMs, 3, 0, 0, 0}}));
    // A later batch (higher ids) whose end times reach back into the first one.
    s.append(batch({{15 * kS, 5 * kMs, 4, 0, 0, 1}, {40 * kS, kMs, 5, 0, 1, 0}, {5 * kS, kMs, 6, 0, 0, 0}}));
    QCOMPARE(s.size(), size_t(6));
    QCOMPARE(s.last_id(), int64_t(6));
    std::vector<int64_t> ids;
    for (const auto& p : s.points()) ids.push_back(p.id);
    QCOMPARE(ids, (std::vector<int64_t>{6, 1, 4, 2, 3, 5}));
    const auto [first, last] = s.range(10 * kS, 20 * kS);
    QCOMPARE(last - first, size_t(3));
    const BoxStats b = s.box_stats(Box{10 * kS, 30 * kS, 2 * kMs, 10 * kMs});
    QCOMPARE(b.count, int64_t(1));
    QCOMPARE(b.min_id, int64_t(4));
    QCOMPARE(s.max_elapsed(0, 100 * kS), 5 * kMs);
    const Box all{0, 100 * kS, 0, INT64_MAX};
    QCOMPARE(s.nth_slowest(all, 1), 5 * kMs);
    QCOMPARE(s.nth_slowest(all, 2), kMs);
    QCOMPARE(s.nth_slowest(all, 6), int64_t(0));  // no more dots than asked: the box's own floor
  }
  void nearestFindsTheDotUnderTheMouse() {
    PointSet s;
    s.append(batch({{10 * kS, 100 * kMs, 1, 0, 0, 0}, {11 * kS, 500 * kMs, 2, 0, 0, 0}}));
    const TimeAxis tx(0, 100 * kS, 0, 1000);
    const ValueAxis vy(0, 1000 * kMs, 1000, 0, false);
    auto hit = s.nearest(tx, vy, 110, 500, 6);
    QVERIFY(hit);
    QCOMPARE(hit->id, int64_t(2));
    QVERIFY(!s.nearest(tx, vy, 300, 500, 6));
  }
  void densityGridCountsEveryDotOnce() {
    PointSet s;
    std::vector<TxPoint> pts;
    // 10,000 dots in one spot (a dense cluster), 3 lone dots elsewhere, one error.
    for (int i = 0; i < 10000; ++i) pts.push_back({50 * kS, 100 * kMs, i + 1, 0, 0, 0});
    pts.push_back({10 * kS, 900 * kMs, 20001, 0, 1, 0});
    pts.push_back({90 * kS, 500 * kMs, 20002, 0, 0, 1});
    pts.push_back({200 * kS, 500 * kMs, 20003, 0, 0, 0});  // outside the time range
    pts.push_back({20 * kS, 5000 * kMs, 20004, 0, 0, 0});  // above the top: clipped into the top row
    s.append(batch(pts));
    const TimeAxis tx(0, 100 * kS, 0, 200);
    const ValueAxis vy(0, 1000 * kMs, 100, 0, false);
    DensityGrid g;
    g.build(s, tx, vy, 2);
    QCOMPARE(g.columns(), 100);
    QCOMPARE(g.rows(), 50);
    QCOMPARE(g.dots(), int64_t(10003));
    QCOMPARE(g.clipped_above(), int64_t(1));
    QCOMPARE(g.max_count(), 10000u);
    QCOMPARE(g.at(50, 45).normal, 10000u);  // x = 100 px -> col 50; y = 90 px -> row 45
    QCOMPARE(g.at(90, 25).errors, 1u);      // the error at 90 s, 500 ms
    QCOMPARE(g.at(20, 0).normal, 1u);       // the clipped one (20 s), on the top row
    QCOMPARE(g.at(10, 5).app, uint8_t(1));  // 10 s, 900 ms, app 1
    uint64_t total = 0;
    for (int r = 0; r < g.rows(); ++r)
      for (int c = 0; c < g.columns(); ++c) total += g.at(c, r).normal + g.at(c, r).errors;
    QCOMPARE(total, uint64_t(10003));
  }
  void numbersAndClock() {
    QCOMPARE(QString::fromStdString(with_commas(51612)), QStringLiteral("51,612"));
    QCOMPARE(QString::fromStdString(format_ms(1466 * kMs)), QStringLiteral("1,466"));
    QCOMPARE(QString::fromStdString(format_ms(1500000)), QStringLiteral("1.50"));
    QCOMPARE(QString::fromStdString(hex16(-1)), QStringLiteral("ffffffffffffffff"));
    QCOMPARE(QString::fromStdString(clock_ms(1234567)).right(3), QStringLiteral("001"));
  }
  void stepMessagesInXViewStyle() {
    Step sock;
    sock.kind = "SOCKET";
    sock.ref_id = 34069859;
    sock.attributes = R"({"addr":"192.168.50.2","port":"8005","localport":"13192"})";
    QCOMPARE(QString::fromStdString(step_message(sock)),
             QStringLiteral("SOCKET[addr=192.168.50.2,port=8005,localport=13192] uid=000000000207dd63"));
    Step close;
    close.kind = "SOCKET_CLOSE";
    close.bytes_read = 51612;
    close.bytes_written = 222;
    close.ref_id = 34069859;
    QCOMPARE(QString::fromStdString(step_message(close)), QStringLiteral("SOCKET-CLOSE R=51,612,W=222,uid=000000000207dd63"));
    Step sql;
    sql.kind = "SQL";
    sql.text = "SELECT 1";
    sql.rows = 3;
    sql.elapsed_ns = 12 * kMs;
    sql.error = "locked";
    QCOMPARE(QString::fromStdString(step_message(sql)), QStringLiteral("SQL[SELECT 1] rows=3 [12 ms]  ERROR: locked"));
  }
  void timelineShowsGapsAndCpuShare() {
    Profile p;
    p.tx.elapsed_ns = 1000 * kMs;
    auto step = [](const char* kind, int64_t at, int64_t gap, int64_t cpu, int64_t elapsed) {
      Step s;
      s.kind = kind;
      s.start_offset_ns = at;
      s.gap_ns = gap;
      s.cpu_ns = cpu;
      s.elapsed_ns = elapsed;
      return s;
    };
    p.steps = {step("START", 0, 0, 0, 0), step("HTTP_CALL", 100 * kMs, 100 * kMs, 10 * kMs, 400 * kMs),
               step("END", 1000 * kMs, 900 * kMs, 450 * kMs, 0)};
    const auto bars = timeline_layout(p);
    QCOMPARE(bars.size(), size_t(3));
    QCOMPARE(bars[1].gap_begin, 0.0);
    QCOMPARE(bars[1].gap_end, 0.1);
    QCOMPARE(bars[1].cpu_share, 0.1);
    QVERIFY(bars[1].is_call);
    QCOMPARE(bars[1].call_end, 0.5);
    QCOMPARE(bars[2].gap_begin, 0.1);
    QCOMPARE(bars[2].gap_end, 1.0);
    QCOMPARE(bars[2].cpu_share, 0.5);
    QVERIFY(!bars[2].is_call);
  }
};

QTEST_GUILESS_MAIN(TestViewerData)
#include "test_viewer_data.moc"
