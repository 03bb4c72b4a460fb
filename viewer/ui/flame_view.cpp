#include "flame_view.h"
#include "frame_name.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <functional>

namespace txray::viewer {

FlameView::FlameView(QWidget* parent) : QWidget(parent) {
  setObjectName("flameGraph");
  setMouseTracking(true);
  setMinimumHeight(kRowHeight * 4);
}

void FlameView::setStacks(const std::vector<CpuStack>& stacks) {
  boxes_ = flame_layout(stacks, 0.0);
  max_depth_ = 0;
  for (const auto& b : boxes_) max_depth_ = std::max(max_depth_, b.depth);
  update();
}

QSize FlameView::sizeHint() const { return {600, kRowHeight * 12}; }

int FlameView::rowHeight() const {
  // Every level fits: rows shrink (down to 4 px, no text under 11) when the stacks are deep.
  return std::max(4, std::min(kRowHeight, (height() - 2) / (max_depth_ + 1)));
}

QRectF FlameView::rectOf(const FlameBox& b) const {
  const double w = width() - 2;
  const int rh = rowHeight();
  const double y = height() - 1 - (b.depth + 1) * rh;
  return {1 + b.x0 * w, y, (b.x1 - b.x0) * w, double(rh - 1)};
}

const FlameBox* FlameView::boxAt(QPoint p) const {
  for (auto it = boxes_.rbegin(); it != boxes_.rend(); ++it)
    if (rectOf(*it).contains(p)) return &*it;
  return nullptr;
}

void FlameView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  if (boxes_.empty()) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(rect(), Qt::AlignCenter, tr("No CPU samples in this transaction"));
    return;
  }
  const QFontMetrics fm(font());
  for (const auto& b : boxes_) {
    QRectF r = rectOf(b);
    if (r.width() < 1.0 || r.bottom() < 0) continue;
    // Warm colours as in the usual flame graphs, stable per name; the modules' "[lib]" frames paler.
    size_t h = std::hash<std::string>{}(b.name);
    bool unnamed = !b.name.empty() && b.name.front() == '[';
    QColor c = QColor::fromHsv(int(8 + h % 42), unnamed ? 60 : int(140 + (h >> 8) % 80), int(225 + (h >> 16) % 30));
    if (b.depth == 0) c = QColor(200, 200, 200);
    painter.fillRect(r, c);
    if (r.width() > 24 && rowHeight() >= 11) {
      painter.setPen(Qt::black);
      QString text = fm.elidedText(QString::fromStdString(names::short_frame_name(b.name)), Qt::ElideRight, int(r.width()) - 4);
      painter.drawText(r.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
    }
  }
}

bool FlameView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const FlameBox* b = boxAt(help->pos())) {
      const int64_t total = boxes_.front().samples;
      QToolTip::showText(help->globalPos(), tr("%1\n%2 samples (%3%)")
                                                .arg(QString::fromStdString(b->name))
                                                .arg(b->samples)
                                                .arg(100.0 * double(b->samples) / double(total), 0, 'f', 1));
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace txray::viewer
