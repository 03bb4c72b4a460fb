// A flame graph of the selected transaction's CPU samples (data/flame_graph.h): the root at the bottom,
// callees above their callers, widths by samples. Hover a frame for its name and share.
#pragma once

#include <QWidget>
#include <vector>

#include "flame_graph.h"

namespace txray::viewer {

class FlameView : public QWidget {
  Q_OBJECT
 public:
  explicit FlameView(QWidget* parent = nullptr);
  void setStacks(const std::vector<CpuStack>& stacks);
  const std::vector<FlameBox>& boxes() const { return boxes_; }
  // The box under a point of the widget, or nullptr.
  const FlameBox* boxAt(QPoint p) const;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRectF rectOf(const FlameBox& b) const;
  int rowHeight() const;
  std::vector<FlameBox> boxes_;
  int max_depth_ = 0;
  static constexpr int kRowHeight = 17;
};

}  // namespace txray::viewer
