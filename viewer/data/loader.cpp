#include "loader.h"

#include <stdexcept>

namespace txray::viewer {

void Loader::open(const QString& path) {
  try {
    store_ = std::make_unique<Store>(path.toStdString());
    last_id_ = 0;
    emit opened(path, store_->count());
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
    for (;;) {
      auto batch = std::make_shared<PointBatch>(store_->load_points(last_id_, kChunk));
      last_id_ = batch->last_id;
      const bool more = batch->more;
      if (!batch->points.empty()) emit pointsLoaded(batch);
      if (!more) break;
    }
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
  emit pollFinished(last_id_);
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

StoreSession::StoreSession(QObject* parent) : QObject(parent), loader_(new Loader) {
  qRegisterMetaType<PointBatchPtr>();
  qRegisterMetaType<TxListPtr>();
  qRegisterMetaType<ProfilePtr>();
  qRegisterMetaType<Box>();
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

}  // namespace txray::viewer
