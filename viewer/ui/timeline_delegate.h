// Paints the profile's timeline column: for each step, its GAP as a grey bar along the transaction's time
// axis with the CPU share of that gap in orange, and a call's own duration as a blue bar beneath.
#pragma once

#include <QStyledItemDelegate>

namespace txray::viewer {

class TimelineDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  static const QColor kGapColor, kCpuColor, kCallColor;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

}  // namespace txray::viewer
