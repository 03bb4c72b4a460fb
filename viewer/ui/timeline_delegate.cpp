#include "timeline_delegate.h"

#include <QPainter>

#include "profile_model.h"

namespace txray::viewer {

const QColor TimelineDelegate::kGapColor(200, 200, 200);
const QColor TimelineDelegate::kCpuColor(245, 130, 20);
const QColor TimelineDelegate::kCallColor(50, 100, 220);

void TimelineDelegate::paint(QPainter* g, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  QStyledItemDelegate::paint(g, option, index);  // selection background
  const QVariant v = index.data(ProfileModel::BarRole);
  if (!v.canConvert<TimelineBar>()) return;
  const TimelineBar b = v.value<TimelineBar>();
  const QRectF r = QRectF(option.rect).adjusted(4, 2, -4, -2);
  auto x = [&](double f) { return r.left() + f * r.width(); };
  g->save();
  g->setPen(Qt::NoPen);
  // Track line, so that the empty part of the axis is visible too.
  g->fillRect(QRectF(r.left(), r.center().y(), r.width(), 1), QColor(235, 235, 235));
  const double gh = r.height() * 0.55;
  const QRectF gap(QPointF(x(b.gap_begin), r.top()), QPointF(std::max(x(b.gap_end), x(b.gap_begin) + 1), r.top() + gh));
  g->fillRect(gap, kGapColor);
  if (b.cpu_share > 0)
    g->fillRect(QRectF(gap.left(), gap.top(), std::max(1.0, gap.width() * b.cpu_share), gap.height()), kCpuColor);
  if (b.is_call)
    g->fillRect(QRectF(QPointF(x(b.call_begin), r.top() + gh + 1), QPointF(std::max(x(b.call_end), x(b.call_begin) + 2), r.bottom())),
                kCallColor);
  // The row's own time.
  g->fillRect(QRectF(x(b.gap_end) - 0.5, r.top(), 1.5, r.height()), QColor(40, 40, 40));
  g->restore();
}

}  // namespace txray::viewer
