#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>

#include "compare_panel.h"
#include "list_panel.h"
#include "profile_format.h"
#include "profile_panel.h"
#include "scatter_view.h"

#ifdef TXRAY_VIEWER_HAS_REPORT
#include <fstream>
#include <thread>

#include "report.h"
#endif

namespace txray::viewer {

namespace {
constexpr int kMaxRecent = 8;
}

MainWindow::MainWindow(bool restore_settings, QWidget* parent)
    : QMainWindow(parent),
      session_(new StoreSession(this)),
      scatter_(new ScatterView(&points_, this)),
      list_(new ListPanel(this)),
      profile_(new ProfilePanel(this)),
      compare_(new ComparePanel(this)),
      tabs_(new QTabWidget(this)),
      vsplit_(new QSplitter(Qt::Vertical, this)),
      hsplit_(new QSplitter(Qt::Horizontal, this)),
      status_(new QLabel(this)) {
  setWindowTitle(tr("txray viewer"));
  scatter_->setObjectName("scatter");
  hsplit_->addWidget(list_);
  hsplit_->addWidget(profile_);
  hsplit_->setStretchFactor(0, 1);
  hsplit_->setStretchFactor(1, 1);
  vsplit_->addWidget(scatter_);
  tabs_->addTab(hsplit_, tr("Transactions"));
  tabs_->addTab(compare_, tr("Comparison"));
  tabs_->setDocumentMode(true);
  vsplit_->addWidget(tabs_);
  vsplit_->setStretchFactor(0, 2);
  vsplit_->setStretchFactor(1, 3);
  setCentralWidget(vsplit_);
  statusBar()->addWidget(status_, 1);
  buildMenus();

  connect(session_, &StoreSession::opened, this, [this](const QString& path, qint64 n) {
    status_->setText(tr("Loading %1 transactions from %2…").arg(n).arg(path));
  });
  connect(session_, &StoreSession::failed, this, [this](const QString& message) {
    error_ = message;  // stays in the status bar until the next store is opened
    updateStatus();
    emit storeFailed(message);
  });
  connect(session_, &StoreSession::pointsLoaded, this, [this](const PointBatchPtr& batch) {
    points_.append(*batch);
    scatter_->pointsChanged();
    emit pointsAdded(static_cast<qint64>(points_.size()));
  });
  connect(session_, &StoreSession::pollFinished, this, [this] {
    if (!first_load_done_) {
      first_load_done_ = true;
      // A saved store (its newest row older than the live window): show all of it, paused.
      const int64_t now = QDateTime::currentMSecsSinceEpoch() * 1000000;
      if (scatter_->live() && points_.size() && points_.max_end() < now - scatter_->liveWindow()) scatter_->fitAll();
      emit loadFinished();
    }
    updateStatus();
  });
  connect(session_, &StoreSession::boxLoaded, this, [this](int request, const TxListPtr& rows) {
    if (request != box_request_) return;  // a newer box was drawn meanwhile
    list_->setRows(rows, points_.apps());
    updateStatus();
    emit listFilled(list_->model()->rowCount());
  });
  connect(session_, &StoreSession::profileLoaded, this, [this](int request, const ProfilePtr& p) {
    if (request && (request == base_example_request_ || request == cur_example_request_)) {
      (request == base_example_request_ ? compare_->baselineProfile() : compare_->currentProfile())->setProfile(p);
      (request == base_example_request_ ? base_example_request_ : cur_example_request_) = 0;
      if (--examples_pending_ == 0) emit examplesShown();
      return;
    }
    if (request != profile_request_) return;
    profile_->setProfile(p);
    shown_id_ = p ? p->tx.id : 0;
    updateStatus();
    emit profileShown(shown_id_);
  });

  connect(scatter_, &ScatterView::boxSelected, this, &MainWindow::onBox);
  connect(scatter_, &ScatterView::compareBoxSelected, this, &MainWindow::compareWith);
  connect(session_, &StoreSession::compared, this, [this](int request, const ComparisonPtr& c) {
    if (request != compare_request_) return;  // a newer comparison was asked for
    examples_pending_ = 0;
    base_example_request_ = cur_example_request_ = 0;
    compare_->setComparison(c);
    if (tabs_->currentWidget() != compare_) {
      // The comparison needs more height than the list: give it about three quarters of the window.
      const int h = vsplit_->height();
      vsplit_->setSizes({h / 4, h - h / 4});
    }
    tabs_->setCurrentWidget(compare_);
    updateStatus();
    emit comparisonShown();
  });
  connect(compare_, &ComparePanel::examplesRequested, this, [this](qint64 base, qint64 cur) {
    examples_pending_ = 0;
    base_example_request_ = cur_example_request_ = 0;
    compare_->baselineProfile()->setProfile(nullptr);
    compare_->currentProfile()->setProfile(nullptr);
    if (base) base_example_request_ = session_->loadProfile(base), ++examples_pending_;
    if (cur) cur_example_request_ = session_->loadProfile(cur), ++examples_pending_;
    if (examples_pending_ == 0) emit examplesShown();
  });
  connect(compare_, &ComparePanel::openTransaction, this, [this](qint64 id) {
    tabs_->setCurrentIndex(0);
    openProfile(id, true);
  });
  connect(scatter_, &ScatterView::pointClicked, this, [this](qint64 id) { openProfile(id, true); });
  connect(scatter_, &ScatterView::viewChanged, this, &MainWindow::updateStatus);
  connect(list_, &ListPanel::transactionSelected, this, [this](qint64 id) { openProfile(id, true); });
  connect(profile_, &ProfilePanel::openTransaction, this, [this](qint64 id) { openProfile(id, true); });
  connect(profile_, &ProfilePanel::backRequested, this, [this] {
    if (history_.size() < 2) return;
    history_.pop_back();
    openProfile(history_.back(), false);
  });

  poll_timer_.setInterval(500);
  connect(&poll_timer_, &QTimer::timeout, this, [this] {
    if (!path_.isEmpty() && first_load_done_) session_->poll();
  });

  resize(1500, 950);
  // The scatter a fifth of the height: the profile below is the reason the viewer exists.
  vsplit_->setSizes({170, 780});
  hsplit_->setSizes({640, 860});
  if (!restore_settings) {
    updateStatus();
    return;
  }
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  vsplit_->restoreState(s.value("window/vsplit").toByteArray());
  hsplit_->restoreState(s.value("window/hsplit").toByteArray());
  profile_->splitter()->restoreState(s.value("window/profileSplit").toByteArray());
  scatter_->setLiveWindow(s.value("view/liveWindowMinutes", 15).toLongLong() * 60000000000LL);
  scatter_->setLogScale(s.value("view/logScale", false).toBool());
  scatter_->setColorByApp(s.value("view/colorByApp", false).toBool());
  updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("window/vsplit", vsplit_->saveState());
  s.setValue("window/hsplit", hsplit_->saveState());
  s.setValue("window/profileSplit", profile_->splitter()->saveState());
  s.setValue("view/liveWindowMinutes", scatter_->liveWindow() / 60000000000LL);
  s.setValue("view/logScale", scatter_->logScale());
  s.setValue("view/colorByApp", scatter_->colorByApp());
  e->accept();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open store…"), QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open txray store"), QFileInfo(path_).path(),
                                                      tr("txray stores (*.db *.sqlite *.sqlite3);;All files (*)"));
    if (!path.isEmpty()) openStore(path);
  });
  recent_menu_ = file->addMenu(tr("Open &recent"));
  updateRecentMenu();
#ifdef TXRAY_VIEWER_HAS_REPORT
  file->addAction(tr("&Export report…"), QKeySequence(tr("Ctrl+E")), this, &MainWindow::exportReport);
#endif
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(tr("&Copy profile"), QKeySequence(tr("Ctrl+Shift+C")), profile_, &ProfilePanel::copyToClipboard);
  edit->addAction(tr("Select &all dots in view"), QKeySequence(tr("Ctrl+A")), this, &MainWindow::selectAllInView);
  edit->addAction(tr("Compare &with…"), QKeySequence(tr("Ctrl+K")), this, &MainWindow::armCompare);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* live = view->addAction(tr("&Live"));
  live->setCheckable(true);
  live->setChecked(scatter_->live());
  live->setShortcut(QKeySequence(Qt::Key_F5));
  connect(live, &QAction::toggled, scatter_, &ScatterView::setLive);
  connect(scatter_, &ScatterView::liveChanged, live, &QAction::setChecked);
  auto* windows = new QActionGroup(this);
  for (int minutes : {5, 15, 60}) {
    QAction* a = view->addAction(tr("Live window: last %1 minutes").arg(minutes));
    a->setCheckable(true);
    a->setShortcut(QKeySequence(minutes == 5 ? tr("Alt+1") : minutes == 15 ? tr("Alt+2") : tr("Alt+3")));
    windows->addAction(a);
    connect(a, &QAction::triggered, this, [this, minutes] {
      scatter_->setLiveWindow(minutes * 60000000000LL);
      scatter_->setLive(true);
    });
    connect(scatter_, &ScatterView::viewChanged, a, [this, a, minutes] {
      a->setChecked(scatter_->liveWindow() == minutes * 60000000000LL);
    });
  }
  view->addSeparator();
  QAction* log = view->addAction(tr("&Log scale"));
  log->setCheckable(true);
  log->setShortcut(QKeySequence(tr("Ctrl+L")));
  connect(log, &QAction::toggled, scatter_, &ScatterView::setLogScale);
  connect(scatter_, &ScatterView::viewChanged, log, [this, log] { log->setChecked(scatter_->logScale()); });
  QAction* apps = view->addAction(tr("Colour by &application"));
  apps->setCheckable(true);
  apps->setShortcut(QKeySequence(tr("Ctrl+P")));
  connect(apps, &QAction::toggled, scatter_, &ScatterView::setColorByApp);
  view->addAction(tr("&Fit all"), QKeySequence(Qt::Key_Home), scatter_, &ScatterView::fitAll);
  view->addAction(tr("Zoom &in"), QKeySequence::ZoomIn, this, [this] { scatter_->zoom(0.5); });
  view->addAction(tr("Zoom &out"), QKeySequence::ZoomOut, this, [this] { scatter_->zoom(2.0); });

  QMenu* go = menuBar()->addMenu(tr("&Go"));
  go->addAction(tr("&Back"), QKeySequence::Back, profile_, &ProfilePanel::backRequested);
  go->addAction(tr("&Slowest in list"), QKeySequence(tr("Ctrl+S")), list_, &ListPanel::selectSlowest);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("txray viewer"),
                       tr("<b>txray viewer</b><p>The X-View of a txray store: response-time scatter, "
                          "transaction list, step profile.</p><p>Left drag: select a box. Click a dot: its "
                          "profile. Wheel: zoom time (Ctrl+wheel: response time). Right drag: pan.</p>"));
  });
}

void MainWindow::updateRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& p : recent) recent_menu_->addAction(p, this, [this, p] { openStore(p); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& path) {
  QSettings s;
  QStringList recent = s.value("recentFiles").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("recentFiles", recent);
  updateRecentMenu();
}

void MainWindow::openStore(const QString& path) {
  path_ = QFileInfo(path).absoluteFilePath();
  setWindowTitle(tr("%1 - txray viewer").arg(QFileInfo(path).fileName()));
  points_.clear();
  first_load_done_ = false;
  error_.clear();
  box_count_ = 0;
  history_.clear();
  scatter_->setSelection(std::nullopt);
  scatter_->pointsChanged();
  list_->setRows(nullptr, {});
  profile_->setProfile(nullptr);
  addRecent(path_);
  session_->open(path_);
  poll_timer_.start();
}

void MainWindow::selectAllInView() {
  scatter_->ensureUpToDate();
  const QRect p = scatter_->plotRect();
  const Box box = scatter_->boxFromPixels(p);
  scatter_->setSelection(box);
  onBox(box);
}

void MainWindow::selectBox(const Box& box) {
  scatter_->setSelection(box);
  onBox(box);
}

void MainWindow::armCompare() {
  if (!scatter_->selection()) {
    status_->setText(tr("Compare with…: box the group to explain first, then draw the baseline box"));
    return;
  }
  scatter_->armCompare(true);
  status_->setText(tr("Draw the baseline box (the group to compare with); Shift+drag does the same any time"));
}

void MainWindow::compareWith(const Box& baseline) {
  scatter_->setCompareSelection(baseline);
  if (!scatter_->selection()) {
    status_->setText(tr("Box the group to explain first (left drag), then Shift+drag the baseline"));
    return;
  }
  std::vector<int64_t> base = points_.ids_in(baseline), cur = points_.ids_in(*scatter_->selection());
  if (base.empty() || cur.empty()) {
    status_->setText(tr("A comparison needs dots in both boxes (current %L1, baseline %L2)").arg(cur.size()).arg(base.size()));
    return;
  }
  status_->setText(tr("Comparing %L1 transactions with a baseline of %L2…").arg(cur.size()).arg(base.size()));
  compare_request_ = session_->compare(std::move(base), std::move(cur));
}

void MainWindow::onBox(const Box& box) {
  // A new current box: the old comparison no longer applies.
  if (scatter_->compareSelection()) {
    scatter_->setCompareSelection(std::nullopt);
    compare_request_ = 0;
  }
  tabs_->setCurrentIndex(0);
  const BoxStats stats = points_.box_stats(box);
  box_count_ = stats.count;
  if (stats.count == 0) {
    box_request_ = 0;
    list_->setRows(std::make_shared<const std::vector<TxSummary>>(), points_.apps());
    updateStatus();
    emit listFilled(0);
    return;
  }
  // A list of a million rows would take seconds and hundreds of MB: keep the slowest max_list_rows_.
  Box query = box;
  list_floor_ns_ = 0;
  if (static_cast<size_t>(stats.count) > max_list_rows_) {
    query.e0 = points_.nth_slowest(box, max_list_rows_);
    list_floor_ns_ = query.e0;
  }
  box_request_ = session_->queryBox(query, stats.min_id, stats.max_id);
  status_->setText(tr("Loading %1 transactions…").arg(stats.count));
}

void MainWindow::openProfile(qint64 id, bool remember) {
  if (id == shown_id_ && profile_->model()->profile()) return;
  if (remember && (history_.empty() || history_.back() != id)) history_.push_back(id);
  profile_request_ = session_->loadProfile(id);
}

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::updateStatus() {
  QString s = error_.isEmpty() ? QString() : tr("Error: %1  ·  ").arg(error_);
  s += tr("%L1 transactions").arg(static_cast<qint64>(points_.size()) + points_.shed());
  // Shed by the collector under load or sampled out by the agents: counted, never drawn.
  if (const int64_t shed = points_.shed(); shed > 0) s += tr(" (%L1 of them counted, not stored)").arg(shed);
  // Steps of no transaction (the data layer counts them as it loads): said, never drawn.
  QString unattributed;
  if (const int64_t n = points_.unattributed_steps(); n > 0) {
    s += tr("  ·  %L1 unattributed steps").arg(n);
    for (const auto& [kind, count] : points_.unattributed_by_kind())
      unattributed += tr("%1%2 %L3").arg(unattributed.isEmpty() ? "" : ", ", QString::fromStdString(kind)).arg(count);
    unattributed = tr("Unattributed steps: %1.\nSteps the agent saw but could not attribute to any request (for "
                      "instance a call made while several requests were in flight on one event-loop thread); they "
                      "are in no transaction. txray show --unattributed lists them.")
                       .arg(unattributed);
  }
  status_->setToolTip(unattributed);
  s += tr("  ·  %1").arg(scatter_->describe());
  if (scatter_->selection()) {
    s += tr("  ·  box: %L1 dots, list: %L2 rows").arg(box_count_).arg(list_->model()->rowCount());
    if (list_floor_ns_ > 0) s += tr(" (the slowest, ≥ %1 ms)").arg(QString::fromStdString(format_ms(list_floor_ns_)));
  }
  if (const auto& p = profile_->model()->profile())
    s += tr("  ·  selected #%1 %2 %3, %4 ms")
             .arg(p->tx.id)
             .arg(QString::fromStdString(p->tx.app), QString::fromStdString(p->tx.name),
                  QString::fromStdString(format_ms(p->tx.elapsed_ns)));
  status_->setText(s);
}

void MainWindow::exportReport() {
  if (path_.isEmpty()) return;
  const QString out = QFileDialog::getSaveFileName(this, tr("Export report"), QFileInfo(path_).path() + "/report.html",
                                                   tr("HTML (*.html);;Markdown (*.md);;JSON (*.json)"));
  if (!out.isEmpty()) exportReportTo(out);
}

bool MainWindow::exportReportTo(const QString& out) {
#ifdef TXRAY_VIEWER_HAS_REPORT
  if (path_.isEmpty()) return false;
  // The report covers the box on the scatter (its time range and minimum response time) and the list's
  // application filter, or the whole store when there is no box.
  report::Options opt;
  opt.db = path_.toStdString();
  const QString suffix = QFileInfo(out).suffix().toLower();
  opt.format = suffix == "md" ? "md" : suffix == "json" ? "json" : "html";
  if (const auto& box = scatter_->selection()) {
    opt.since_unix_ns = box->t0;
    opt.until_unix_ns = box->t1;
    opt.min_ms = static_cast<double>(box->e0) / 1e6;
  }
  opt.app = list_->model()->filter().app;
  status_->setText(tr("Writing report %1…").arg(out));
  // A report over a million rows takes seconds: write it off the UI thread, report back by a queued call
  // (guarded: the window may be closed before the report is done).
  QPointer<MainWindow> self = this;
  std::thread([self, opt, out] {
    std::ofstream file(out.toStdString());
    std::string error = file ? report::write_report(opt, file) : "cannot write " + out.toStdString();
    file.close();
    QMetaObject::invokeMethod(qApp, [self, out, error] {
      if (!self) return;
      self->status_->setText(error.empty() ? tr("Report written to %1").arg(out) : QString::fromStdString(error));
      emit self->reportWritten(out, QString::fromStdString(error));
    }, Qt::QueuedConnection);
  }).detach();
  return true;
#else
  (void)out;
  return false;
#endif
}

}  // namespace txray::viewer
