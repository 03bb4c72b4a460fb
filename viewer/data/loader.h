// Store access off the UI thread. A StoreSession owns a worker QThread with a Loader on it; the UI calls
// the session's methods (they return at once) and gets the results as signals carrying shared, immutable
// value types. Requests run one at a time, in order, on the worker.
#pragma once

#include <QObject>
#include <QString>
#include <QThread>

#include <memory>

#include "comparison.h"
#include "store.h"
#include "types.h"

Q_DECLARE_METATYPE(txray::viewer::PointBatchPtr)
Q_DECLARE_METATYPE(txray::viewer::TxListPtr)
Q_DECLARE_METATYPE(txray::viewer::ProfilePtr)
Q_DECLARE_METATYPE(txray::viewer::Box)
Q_DECLARE_METATYPE(txray::viewer::ComparisonPtr)
Q_DECLARE_METATYPE(txray::viewer::CompareRequestPtr)

namespace txray::viewer {

// Lives on the worker thread; owns the Store (an SQLite connection belongs to one thread).
class Loader : public QObject {
  Q_OBJECT
 public:
  static constexpr int64_t kChunk = 200000;        // rows per pointsLoaded signal
  // First loads of stores with at least this many ids use two threads (a variable for the tests).
  inline static int64_t parallel_from = 300000;

 public slots:
  void open(const QString& path);
  void poll();
  void queryBox(int request, txray::viewer::Box box, qint64 min_id, qint64 max_id);
  void loadProfile(int request, qint64 id);
  void compare(int request, const txray::viewer::CompareRequestPtr& req);

 signals:
  void opened(const QString& path, qint64 transactions);
  void failed(const QString& message);
  void pointsLoaded(const txray::viewer::PointBatchPtr& batch);
  void pollFinished(qint64 last_id);
  void boxLoaded(int request, const txray::viewer::TxListPtr& rows);
  void profileLoaded(int request, const txray::viewer::ProfilePtr& profile);
  void compared(int request, const txray::viewer::ComparisonPtr& result);

 private:
  // The first load of a big store reads the upper half of the ids on a second thread with its own
  // connection (SQLite decoding is the cost, and the machine has more than one core).
  void load_in_two_halves(int64_t max_id);

  std::unique_ptr<Store> store_;
  std::string path_;
  int64_t last_id_ = 0;
  int64_t last_shed_ = 0;  // the shed_counts total last reported
};

class StoreSession : public QObject {
  Q_OBJECT
 public:
  explicit StoreSession(QObject* parent = nullptr);
  ~StoreSession() override;

  // Each returns at once; results come as the signals below.
  void open(const QString& path);  // then polls the first rows in
  void poll();                     // loads rows added since the last poll (ignored while one runs)
  int queryBox(const Box& box, int64_t min_id, int64_t max_id);  // returns the request number
  int loadProfile(int64_t id);
  // Compares two selections (transaction ids) with collector/report: the `compared` signal.
  int compare(std::vector<int64_t> baseline_ids, std::vector<int64_t> current_ids, int top = 30);
  bool polling() const { return polling_; }

 signals:
  void opened(const QString& path, qint64 transactions);
  void failed(const QString& message);
  void pointsLoaded(const txray::viewer::PointBatchPtr& batch);
  void pollFinished(qint64 last_id);
  void boxLoaded(int request, const txray::viewer::TxListPtr& rows);
  void profileLoaded(int request, const txray::viewer::ProfilePtr& profile);
  void compared(int request, const txray::viewer::ComparisonPtr& result);

 private:
  QThread thread_;
  Loader* loader_;
  bool polling_ = false;
  int next_request_ = 1;
};

}  // namespace txray::viewer
