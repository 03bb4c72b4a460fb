#include "scatter_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "profile_format.h"

namespace txray::viewer {

namespace {
constexpr int kLeft = 64, kRight = 14, kTop = 10, kBottom = 26;
constexpr int kCell = 2;          // pixels per density cell
constexpr double kPickRadius = 6;  // pixels

const QColor kAppPalette[] = {{31, 119, 180}, {44, 160, 44}, {148, 103, 189}, {255, 127, 14},
                              {23, 190, 207}, {140, 86, 75}, {188, 189, 34}, {127, 127, 127}};

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}
}  // namespace

ScatterView::ScatterView(const PointSet* points, QWidget* parent) : QWidget(parent), points_(points) {
  setMouseTracking(true);
  setMinimumSize(300, 160);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

QRect ScatterView::plotRect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight), std::max(10, height() - kTop - kBottom));
}

void ScatterView::pointsChanged() {
  dirty_ = true;
  update();
}

void ScatterView::ensureUpToDate() {
  if (dirty_ || image_.size() != plotRect().size()) rebuild();
}

void ScatterView::setLive(bool live) {
  if (live == live_) return;
  live_ = live;
  if (live_) y_max_.reset();
  else {
    t0_ = tx_.t0();
    t1_ = tx_.t1();
  }
  pointsChanged();
  emit liveChanged(live_);
  emit viewChanged();
}

void ScatterView::pause() {
  if (live_) setLive(false);
}

void ScatterView::setLiveWindow(int64_t ns) {
  window_ns_ = std::max<int64_t>(ns, 1000000000);
  pointsChanged();
  emit viewChanged();
}

void ScatterView::setLogScale(bool log) {
  log_ = log;
  pointsChanged();
  emit viewChanged();
}

void ScatterView::setColorByApp(bool on) {
  by_app_ = on;
  pointsChanged();
}

void ScatterView::fitAll() {
  y_max_.reset();
  const int64_t pad = std::max<int64_t>(1000000000, (points_->max_end() - points_->min_end()) / 50);
  setTimeRange(points_->min_end() - pad, points_->max_end() + pad);
}

void ScatterView::setTimeRange(int64_t t0, int64_t t1) {
  const bool was_live = live_;
  live_ = false;
  t0_ = t0;
  t1_ = std::max(t1, t0 + 1000000);
  pointsChanged();
  if (was_live) emit liveChanged(false);
  emit viewChanged();
}

void ScatterView::zoom(double factor) {
  const QRect p = plotRect();
  pause();
  const TimeAxis z = tx_.zoomed(p.center().x(), factor);
  setTimeRange(z.t0(), z.t1());
}

void ScatterView::setSelection(const std::optional<Box>& box) {
  selection_ = box;
  update();
}

Box ScatterView::boxFromPixels(const QRect& r) const {
  const QRect p = plotRect();
  Box b;
  b.t0 = tx_.to_time(r.left());
  b.t1 = tx_.to_time(r.right() + 1);
  b.e1 = r.top() <= p.top() ? INT64_MAX : vy_.to_value(r.top());
  b.e0 = r.bottom() >= p.bottom() ? 0 : vy_.to_value(r.bottom() + 1);
  return b;
}

QString ScatterView::describe() const {
  if (live_) return QStringLiteral("live, last %1 min").arg(window_ns_ / 60000000000LL);
  return QStringLiteral("%1 - %2").arg(QString::fromStdString(date_clock_ms(tx_.t0())),
                                       QString::fromStdString(date_clock_ms(tx_.t1())));
}

void ScatterView::rebuild() {
  const QRect p = plotRect();
  int64_t t0 = t0_, t1 = t1_;
  if (live_) {
    t1 = points_->size() ? points_->max_end() + window_ns_ / 60 : window_ns_;
    t0 = t1 - window_ns_;
  }
  tx_ = TimeAxis(t0, t1, p.left(), p.right() + 1);
  int64_t top = y_max_.value_or(0);
  if (!y_max_) {
    // Every dot fits: the slow outliers are what the X-View is for. When they flatten the rest, the log
    // scale (Ctrl+L) or Ctrl+wheel on the top helps; dots above a lowered top are drawn on the top row.
    const int64_t max = points_->max_elapsed(t0, t1);
    top = log_ ? max * 2 : max + max / 20;
  }
  top = std::max<int64_t>(top, 1000000);  // at least 1 ms
  // Linear: a margin of 2 % below 0 ms, so that the fastest dots sit above the frame line.
  vy_ = ValueAxis(log_ ? std::min<int64_t>(100000, top / 10) : -top / 50, top, p.bottom() + 1, p.top(), log_);
  grid_.build(*points_, tx_, vy_, kCell);
  renderImage();
  dirty_ = false;
}

QColor ScatterView::cellColor(const DensityCell& c, bool error) const {
  const uint32_t n = error ? c.errors : c.normal;
  // Density on a log ramp: a lone dot is clearly visible, a dense cluster is dark.
  const double t = grid_.max_count() > 1 ? std::log1p(n - 1.0) / std::log1p(grid_.max_count() - 1.0) : 0.0;
  if (error) return mix(QColor(240, 60, 60), QColor(120, 0, 0), t);
  if (by_app_) {
    const QColor base = kAppPalette[c.app % std::size(kAppPalette)];
    return mix(base.lighter(120), base.darker(250), t);
  }
  return mix(QColor(90, 150, 240), QColor(10, 25, 110), t);
}

void ScatterView::renderImage() {
  const QRect p = plotRect();
  image_ = QImage(p.size(), QImage::Format_ARGB32_Premultiplied);
  image_.fill(Qt::transparent);
  const int cols = grid_.columns(), rows = grid_.rows(), w = image_.width(), h = image_.height();
  auto fill = [&](int col, int row, int size, QRgb rgb) {
    const int x0 = col * kCell - (size - kCell) / 2, y0 = row * kCell - (size - kCell) / 2;
    for (int y = std::max(0, y0); y < std::min(h, y0 + size); ++y) {
      auto* line = reinterpret_cast<QRgb*>(image_.scanLine(y));
      for (int x = std::max(0, x0); x < std::min(w, x0 + size); ++x) line[x] = rgb;
    }
  };
  // Normal dots first, failed ones on top, slightly larger, so that errors are never hidden.
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (const auto& cell = grid_.at(c, r); cell.normal) fill(c, r, kCell + 2, cellColor(cell, false).rgb());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (const auto& cell = grid_.at(c, r); cell.errors) fill(c, r, kCell + 3, cellColor(cell, true).rgb());
}

void ScatterView::paintEvent(QPaintEvent*) {
  ensureUpToDate();
  QPainter g(this);
  const QRect p = plotRect();
  g.fillRect(rect(), palette().window());
  g.fillRect(p, Qt::white);
  g.setFont(font());
  const QFontMetrics fm(font());

  g.setPen(QColor(225, 225, 225));
  const auto tticks = time_ticks(tx_.t0(), tx_.t1(), std::max(2, p.width() / 110));
  const auto vticks = value_ticks(vy_.v0(), vy_.v1(), log_, std::max(2, p.height() / 40));
  for (const auto& t : tticks) g.drawLine(QPointF(tx_.to_x(t.value), p.top()), QPointF(tx_.to_x(t.value), p.bottom()));
  for (const auto& t : vticks) g.drawLine(QPointF(p.left(), vy_.to_y(t.value)), QPointF(p.right(), vy_.to_y(t.value)));
  g.drawImage(p.topLeft(), image_);

  g.setPen(palette().windowText().color());
  g.drawRect(p.adjusted(0, 0, -1, -1));
  for (const auto& t : tticks) {
    const QString s = QString::fromStdString(t.label);
    const double x = tx_.to_x(t.value);
    g.drawText(QRectF(x - 60, p.bottom() + 4, 120, fm.height()), Qt::AlignHCenter | Qt::AlignTop, s);
  }
  for (const auto& t : vticks) {
    const double y = vy_.to_y(t.value);
    g.drawText(QRectF(0, y - fm.height() / 2.0, kLeft - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::fromStdString(t.label));
  }

  auto draw_box = [&](const Box& b, QColor pen, QColor fill, const QString& label) {
    const double x0 = std::max<double>(p.left(), tx_.to_x(b.t0));
    const double x1 = std::min<double>(p.right(), tx_.to_x(b.t1));
    const double y0 = b.e1 == INT64_MAX ? p.top() : std::max<double>(p.top(), vy_.to_y(b.e1));
    const double y1 = std::min<double>(p.bottom(), vy_.to_y(b.e0));
    if (x1 <= x0) return;
    g.setPen(QPen(pen, 1.5));
    g.setBrush(fill);
    g.drawRect(QRectF(QPointF(x0, y0), QPointF(x1, y1)));
    if (!label.isEmpty()) {
      g.setPen(pen.darker(130));
      g.drawText(QRectF(x0 + 4, y0 + 2, std::max(60.0, x1 - x0), fm.height()), Qt::AlignLeft | Qt::AlignTop, label);
    }
  };
  // With a comparison both boxes are named: the first box is the current group, the second the baseline.
  if (selection_)
    draw_box(*selection_, QColor(230, 120, 0), QColor(255, 160, 0, 30), compare_ ? QStringLiteral("current") : QString());
  if (compare_) draw_box(*compare_, QColor(0, 150, 90), QColor(0, 190, 110, 30), QStringLiteral("baseline"));
  if (button_ == Qt::LeftButton) {
    g.setPen(QPen(QColor(0, 0, 0), 1, Qt::DashLine));
    g.setBrush(drag_compare_ ? QColor(0, 190, 110, 40) : QColor(0, 120, 255, 40));
    g.drawRect(QRect(press_, drag_).normalized());
  }
  g.setBrush(Qt::NoBrush);
  QString badge = live_ ? QStringLiteral("LIVE %1 min").arg(window_ns_ / 60000000000LL) : QStringLiteral("PAUSED");
  if (grid_.clipped_above()) badge += QStringLiteral("   %1 above the top").arg(grid_.clipped_above());
  g.setPen(live_ ? QColor(0, 140, 0) : QColor(120, 120, 120));
  g.drawText(p.adjusted(6, 4, -6, -4), Qt::AlignRight | Qt::AlignTop, badge);
  emit framePainted(grid_.dots());
}

void ScatterView::resizeEvent(QResizeEvent*) { dirty_ = true; }

void ScatterView::mousePressEvent(QMouseEvent* e) {
  button_ = e->button();
  press_ = drag_ = e->position().toPoint();
  drag_compare_ = button_ == Qt::LeftButton && (compare_armed_ || (e->modifiers() & Qt::ShiftModifier));
}

void ScatterView::setCompareSelection(const std::optional<Box>& box) {
  compare_ = box;
  update();
}

void ScatterView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint at = e->position().toPoint();
  if (button_ == Qt::LeftButton) {
    drag_ = at;
    update();
  } else if (button_ == Qt::RightButton || button_ == Qt::MiddleButton) {
    pause();
    const TimeAxis moved = tx_.panned(at.x() - drag_.x());
    drag_ = at;
    setTimeRange(moved.t0(), moved.t1());
  }
}

void ScatterView::mouseReleaseEvent(QMouseEvent* e) {
  const Qt::MouseButton b = button_;
  button_ = Qt::NoButton;
  if (b != Qt::LeftButton || e->button() != Qt::LeftButton) return;
  drag_ = e->position().toPoint();
  const QRect r = QRect(press_, drag_).normalized().intersected(plotRect());
  if ((drag_ - press_).manhattanLength() > 4 && r.width() > 1 && r.height() > 1) {
    if (drag_compare_) {
      drag_compare_ = compare_armed_ = false;
      compare_ = boxFromPixels(r);
      update();
      emit compareBoxSelected(*compare_);
      return;
    }
    selection_ = boxFromPixels(r);
    update();
    emit boxSelected(*selection_);
  } else if (auto p = points_->nearest(tx_, vy_, drag_.x(), drag_.y(), kPickRadius)) {
    update();
    emit pointClicked(p->id);
  } else {
    update();
  }
}

void ScatterView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  const double factor = std::pow(0.8, steps);
  if (e->modifiers() & Qt::ControlModifier) {
    y_max_ = vy_.zoomed(factor).v1();
    pointsChanged();
  } else {
    pause();
    const TimeAxis z = tx_.zoomed(e->position().x(), factor);
    setTimeRange(z.t0(), z.t1());
  }
  e->accept();
}

bool ScatterView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* h = static_cast<QHelpEvent*>(e);
    if (auto p = points_->nearest(tx_, vy_, h->pos().x(), h->pos().y(), kPickRadius)) {
      const auto& apps = points_->apps();
      const auto& names = points_->names();
      QToolTip::showText(h->globalPos(),
                         QStringLiteral("%1  %2\n%3 ms   ended %4%5\n#%6 (click for its profile)")
                             .arg(QString::fromStdString(p->app < apps.size() ? apps[p->app] : "?"),
                                  QString::fromStdString(p->name < names.size() ? names[p->name] : "?"),
                                  QString::fromStdString(format_ms(p->elapsed_ns)),
                                  QString::fromStdString(clock_ms(p->end_ns)),
                                  p->error ? QStringLiteral("   ERROR") : QString())
                             .arg(p->id),
                         this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

}  // namespace txray::viewer
