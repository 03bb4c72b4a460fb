// The item models under QAbstractItemModelTester: the transaction list (filter, sort) and the profile.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "profile_model.h"
#include "transaction_list_model.h"

using namespace txray::viewer;

namespace {
constexpr int64_t kMs = 1000000;

TxListPtr sample_rows() {
  auto rows = std::make_shared<std::vector<TxSummary>>();
  auto add = [&](int64_t id, const char* app, const char* name, int64_t ms, int status, const char* error) {
    TxSummary r;
    r.id = id;
    r.end_ns = id * 1000 * kMs;
    r.app = app;
    r.name = name;
    r.elapsed_ns = ms * kMs;
    r.cpu_ns = ms * kMs / 2;
    r.status = status;
    r.error = error;
    rows->push_back(r);
  };
  add(1, "shop", "GET /orders/{id}", 30, 200, "");
  add(2, "shop", "POST /checkout", 900, 500, "HTTP 500: deadlock detected");
  add(3, "payments", "POST /charge", 45, 200, "");
  add(4, "shop", "GET /ORDERS/{id}", 5, 200, "");
  add(5, "portal", "GET /reports/{id}", 2942, 200, "");
  return rows;
}

std::vector<int64_t> ids(const TransactionListModel& m) {
  std::vector<int64_t> out;
  for (int r = 0; r < m.rowCount(); ++r) out.push_back(m.index(r, 0).data(TransactionListModel::IdRole).toLongLong());
  return out;
}
}  // namespace

class TestViewerModels : public QObject {
  Q_OBJECT
 private slots:
  void listSortsFiltersAndPassesTheTester() {
    TransactionListModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    m.setRows(sample_rows());
    QCOMPARE(m.rowCount(), 5);
    QCOMPARE(ids(m), (std::vector<int64_t>{5, 2, 3, 1, 4}));  // default: slowest first
    m.sort(TransactionListModel::kEnd, Qt::AscendingOrder);
    QCOMPARE(ids(m), (std::vector<int64_t>{1, 2, 3, 4, 5}));
    m.sort(TransactionListModel::kApp, Qt::AscendingOrder);
    QCOMPARE(ids(m), (std::vector<int64_t>{3, 5, 1, 2, 4}));

    ListFilter f;
    f.name_contains = "orders";  // case-insensitive
    m.setFilter(f);
    QCOMPARE(ids(m), (std::vector<int64_t>{1, 4}));
    f = {};
    f.app = "shop";
    f.min_elapsed_ns = 10 * kMs;
    m.setFilter(f);
    QCOMPARE(ids(m), (std::vector<int64_t>{1, 2}));
    f = {};
    f.errors_only = true;
    m.setFilter(f);
    QCOMPARE(ids(m), (std::vector<int64_t>{2}));
    QCOMPARE(m.totalRows(), 5);
    m.setFilter({});

    m.sort(TransactionListModel::kResponse, Qt::DescendingOrder);
    QCOMPARE(m.index(0, TransactionListModel::kResponse).data().toString(), QStringLiteral("2,942"));
    QCOMPARE(m.index(1, TransactionListModel::kError).data().toString(), QStringLiteral("HTTP 500: deadlock detected"));
    QVERIFY(m.index(1, 0).data(Qt::ForegroundRole).isValid());  // errors in red
    QCOMPARE(m.index(0, TransactionListModel::kResponse).data(TransactionListModel::SortRole).toLongLong(), 2942 * kMs);
    QCOMPARE(m.headerData(TransactionListModel::kClient, Qt::Horizontal, Qt::DisplayRole).toString(), QStringLiteral("Client"));
    QCOMPARE(m.rowOf(3), 2);
    m.setRows(nullptr);
    QCOMPARE(m.rowCount(), 0);
  }

  void sortingKeepsTheSelectionOnItsTransaction() {
    TransactionListModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setRows(sample_rows());
    QPersistentModelIndex sel(m.index(m.rowOf(3), 2));
    m.sort(TransactionListModel::kEnd, Qt::DescendingOrder);
    QCOMPARE(sel.data(TransactionListModel::IdRole).toLongLong(), 3);
    QCOMPARE(sel.row(), 2);
  }

  void profileRowsInXViewLayout() {
    auto p = std::make_shared<Profile>();
    p->tx.elapsed_ns = 2942 * kMs;
    p->start_ns = 0;
    auto step = [&](const char* kind, int parent, int depth, int64_t at, int64_t gap, int64_t cpu, int64_t elapsed) {
      Step s;
      s.no = static_cast<int>(p->steps.size());
      s.kind = kind;
      s.parent = parent;
      s.depth = depth;
      s.start_offset_ns = at * kMs;
      s.gap_ns = gap * kMs;
      s.cpu_ns = cpu * kMs;
      s.elapsed_ns = elapsed * kMs;
      p->steps.push_back(s);
      return &p->steps.back();
    };
    step("START", -1, 0, 0, 0, 0, 0);
    step("HTTP_CALL", -1, 0, 12, 12, 0, 2929)->callee_tx_id = 77;
    step("SOCKET_CLOSE", 1, 1, 1478, 1466, 0, 0)->bytes_read = 51612;
    step("END", -1, 0, 2942, 1464, 1356, 0);

    ProfileModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setProfile(p);
    QCOMPARE(m.rowCount(), 4);
    QCOMPARE(m.columnCount(), int(ProfileModel::kColumns));
    QCOMPARE(m.index(3, ProfileModel::kNo).data().toString(), QStringLiteral("0003"));
    QCOMPARE(m.index(3, ProfileModel::kGap).data().toString(), QStringLiteral("1,464"));
    QCOMPARE(m.index(3, ProfileModel::kCpu).data().toString(), QStringLiteral("1,356"));
    QCOMPARE(m.index(2, ProfileModel::kMessage).data().toString(), QStringLiteral("    SOCKET-CLOSE R=51,612,W=0"));
    QCOMPARE(m.index(1, ProfileModel::kMessage).data(ProfileModel::CalleeRole).toLongLong(), 77);
    QVERIFY(!m.index(3, ProfileModel::kMessage).data(ProfileModel::CalleeRole).isValid());
    // Long gaps (> 20 % of the response) are highlighted; short ones are not.
    QVERIFY(m.index(3, ProfileModel::kCpu).data(Qt::BackgroundRole).isValid());
    QVERIFY(!m.index(1, ProfileModel::kGap).data(Qt::BackgroundRole).isValid());
    const auto bar = m.index(3, ProfileModel::kTimeline).data(ProfileModel::BarRole).value<TimelineBar>();
    QVERIFY(std::abs(bar.cpu_share - 1356.0 / 1464) < 1e-9);
    QVERIFY(m.headerData(ProfileModel::kTimeline, Qt::Horizontal, Qt::DisplayRole).toString().contains("2,942"));
    m.setProfile(nullptr);
    QCOMPARE(m.rowCount(), 0);
  }
};

QTEST_MAIN(TestViewerModels)
#include "test_viewer_models.moc"
