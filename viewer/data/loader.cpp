#include "loader.h"

#include <stdexcept>
#include <thread>

namespace txray::viewer {

void Loader::open(const QString& path) {
  try {
    store_ = std::make_unique<Store>(path.toStdString());
    path_ = path.toStdString();
    last_id_ = 0;
    last_shed_ = 0;
    emit opened(path, store_->max_id());
  } catch (const std::exception& e) {
    store_.reset();
    emit failed(QString::fromStdString(e.what()));
  }
}

void Loader::poll() {
  if (!store_) {
    emit pollFinished(last_id_);
    return;
  }
  try {
    const int64_t max_id = last_id_ == 0 ? store_->max_id() : 0;
    if (max_id >= parallel_from) load_in_two_halves(max_id);
    for (;;) {
      auto batch = std::make_shared<PointBatch>(store_->load_points(last_id_, kChunk));
      last_id_ = batch->last_id;
      const bool more = batch->more;
      if (!batch->points.empty() || !batch->unattributed.empty()) emit pointsLoaded(batch);
      if (!more) break;
    }
    // Transactions only counted (load shedding, head sampling): their total, when it changed.
    if (const int64_t shed = store_->shed_count(); shed != last_shed_) {
      auto batch = std::make_shared<PointBatch>();
      batch->apps = store_->apps();
      batch->names = store_->names();
      batch->last_id = last_id_;
      batch->shed = last_shed_ = shed;
      emit pointsLoaded(batch);
    }
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
  emit pollFinished(last_id_);
}

void Loader::load_in_two_halves(int64_t max_id) {
  const int64_t mid = max_id / 2;
  PointBatch upper;
  std::exception_ptr upper_error;
  std::thread helper([&] {
    try {
      upper = Store(path_).load_points(mid, INT64_MAX - 1, max_id);
    } catch (...) {
      upper_error = std::current_exception();
    }
  });
  try {
    for (bool more = true; more;) {
      PointBatch lower = store_->load_points(last_id_, kChunk, mid);
      last_id_ = std::max(last_id_, lower.last_id);
      more = lower.more;
      if (!lower.points.empty() || !lower.unattributed.empty())
        emit pointsLoaded(std::make_shared<PointBatch>(std::move(lower)));
    }
  } catch (...) {
    helper.join();
    throw;
  }
  helper.join();
  if (upper_error) std::rethrow_exception(upper_error);
  // The helper numbered applications and names in its own dictionaries: renumber into store_'s.
  std::vector<uint8_t> app_map;
  std::vector<uint16_t> name_map;
  for (const auto& a : upper.apps) app_map.push_back(static_cast<uint8_t>(store_->app_index(a)));
  for (const auto& n : upper.names) name_map.push_back(static_cast<uint16_t>(store_->name_index(n)));
  // The upper half's unattributed steps ride on its first batch (a batch of no dots when it has none).
  for (size_t at = 0; at < upper.points.size() || (at == 0 && !upper.unattributed.empty());
       at += static_cast<size_t>(kChunk)) {
    auto batch = std::make_shared<PointBatch>();
    if (at == 0) batch->unattributed = std::move(upper.unattributed);
    const size_t end = std::min(upper.points.size(), at + static_cast<size_t>(kChunk));
    batch->points.assign(upper.points.begin() + static_cast<std::ptrdiff_t>(at),
                         upper.points.begin() + static_cast<std::ptrdiff_t>(end));
    for (auto& p : batch->points) {
      p.app = app_map[p.app];
      p.name = name_map[p.name];
    }
    if (!batch->points.empty()) last_id_ = std::max(last_id_, batch->points.back().id);
    if (end == upper.points.size()) last_id_ = std::max(last_id_, upper.last_id);  // containers after the last dot
    batch->last_id = last_id_;
    batch->apps = store_->apps();
    batch->names = store_->names();
    emit pointsLoaded(batch);
  }
  last_id_ = std::max(last_id_, upper.last_id);
}

void Loader::queryBox(int request, Box box, qint64 min_id, qint64 max_id) {
  if (!store_) return;
  try {
    emit boxLoaded(request, std::make_shared<const std::vector<TxSummary>>(store_->query_box(box, min_id, max_id)));
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
}

void Loader::loadProfile(int request, qint64 id) {
  if (!store_) return;
  try {
    auto p = store_->load_profile(id);
    emit profileLoaded(request, p ? std::make_shared<const Profile>(std::move(*p)) : ProfilePtr());
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
}

void Loader::compare(int request, const CompareRequestPtr& req) {
  // Its own connection through collector/report (read-only, one read transaction), like `txray report`.
  auto result = std::make_shared<Comparison>(path_.empty() ? Comparison{"no store open", {}, {}}
                                                           : compare_selections(path_, *req));
  emit compared(request, result);
}

StoreSession::StoreSession(QObject* parent) : QObject(parent), loader_(new Loader) {
  qRegisterMetaType<PointBatchPtr>();
  qRegisterMetaType<TxListPtr>();
  qRegisterMetaType<ProfilePtr>();
  qRegisterMetaType<Box>();
  qRegisterMetaType<ComparisonPtr>();
  qRegisterMetaType<CompareRequestPtr>();
  loader_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, loader_, &QObject::deleteLater);
  connect(loader_, &Loader::opened, this, &StoreSession::opened);
  connect(loader_, &Loader::failed, this, &StoreSession::failed);
  connect(loader_, &Loader::pointsLoaded, this, &StoreSession::pointsLoaded);
  connect(loader_, &Loader::pollFinished, this, [this](qint64 last_id) {
    polling_ = false;
    emit pollFinished(last_id);
  });
  connect(loader_, &Loader::boxLoaded, this, &StoreSession::boxLoaded);
  connect(loader_, &Loader::profileLoaded, this, &StoreSession::profileLoaded);
  connect(loader_, &Loader::compared, this, &StoreSession::compared);
  thread_.setObjectName("txray-store");
  thread_.start();
}

StoreSession::~StoreSession() {
  thread_.quit();
  thread_.wait();
}

void StoreSession::open(const QString& path) {
  QMetaObject::invokeMethod(loader_, "open", Qt::QueuedConnection, Q_ARG(QString, path));
  polling_ = false;
  poll();
}

void StoreSession::poll() {
  if (polling_) return;
  polling_ = true;
  QMetaObject::invokeMethod(loader_, "poll", Qt::QueuedConnection);
}

int StoreSession::queryBox(const Box& box, int64_t min_id, int64_t max_id) {
  const int request = next_request_++;
  QMetaObject::invokeMethod(loader_, "queryBox", Qt::QueuedConnection, Q_ARG(int, request),
                            Q_ARG(txray::viewer::Box, box), Q_ARG(qint64, min_id), Q_ARG(qint64, max_id));
  return request;
}

int StoreSession::loadProfile(int64_t id) {
  const int request = next_request_++;
  QMetaObject::invokeMethod(loader_, "loadProfile", Qt::QueuedConnection, Q_ARG(int, request), Q_ARG(qint64, id));
  return request;
}

int StoreSession::compare(std::vector<int64_t> baseline_ids, std::vector<int64_t> current_ids, int top) {
  const int request = next_request_++;
  auto req = std::make_shared<const CompareRequest>(CompareRequest{std::move(baseline_ids), std::move(current_ids), top});
  QMetaObject::invokeMethod(loader_, "compare", Qt::QueuedConnection, Q_ARG(int, request),
                            Q_ARG(txray::viewer::CompareRequestPtr, req));
  return request;
}

}  // namespace txray::viewer
