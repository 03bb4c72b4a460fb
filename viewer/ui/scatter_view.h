// The X-View scatter: x = end time, y = response time. Paints a DensityGrid (cost independent of the dot
// count), in live mode follows the newest transactions over a 5/15/60-minute window, in paused mode shows
// any range with wheel zoom and right-button pan. Left drag selects a box; a click picks one dot.
#pragma once

#include <QImage>
#include <QWidget>

#include <optional>

#include "axis.h"
#include "density_grid.h"
#include "point_set.h"
#include "types.h"

namespace txray::viewer {

class ScatterView : public QWidget {
  Q_OBJECT
 public:
  explicit ScatterView(const PointSet* points, QWidget* parent = nullptr);

  // Call after the PointSet changed: re-buckets on the next paint.
  void pointsChanged();
  // Re-buckets now if needed, so that the axes match the current points and size (before a paint).
  void ensureUpToDate();
  void setLive(bool live);
  bool live() const { return live_; }
  void setLiveWindow(int64_t ns);
  int64_t liveWindow() const { return window_ns_; }
  void setLogScale(bool log);
  bool logScale() const { return log_; }
  void setColorByApp(bool on);
  bool colorByApp() const { return by_app_; }
  void fitAll();                                   // paused, whole time range, automatic y
  void setTimeRange(int64_t t0, int64_t t1);       // paused on [t0, t1]
  void zoom(double factor);                        // around the middle
  void setSelection(const std::optional<Box>& box);
  const std::optional<Box>& selection() const { return selection_; }
  // The second box, the baseline of a comparison (Shift+drag, or a drag after armCompare()).
  void setCompareSelection(const std::optional<Box>& box);
  const std::optional<Box>& compareSelection() const { return compare_; }
  void armCompare(bool on) { compare_armed_ = on; }  // the next left drag selects the baseline
  bool compareArmed() const { return compare_armed_; }

  QRect plotRect() const;
  const TimeAxis& timeAxis() const { return tx_; }
  const ValueAxis& valueAxis() const { return vy_; }
  const DensityGrid& grid() const { return grid_; }
  // Pixel rectangle -> data box (the plot's top/bottom edges open the box to include clipped dots).
  Box boxFromPixels(const QRect& r) const;
  QString describe() const;  // "live, last 15 min" / "12:00:00 - 12:30:00"

  QSize sizeHint() const override { return {900, 380}; }

 signals:
  void boxSelected(const txray::viewer::Box& box);
  void compareBoxSelected(const txray::viewer::Box& box);  // Shift+drag: the baseline box
  void pointClicked(qint64 id);
  void viewChanged();
  void liveChanged(bool live);
  void framePainted(qint64 dots);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  bool event(QEvent*) override;  // tooltips

 private:
  void rebuild();
  void renderImage();
  void pause();
  QColor cellColor(const DensityCell& c, bool error) const;

  const PointSet* points_;
  bool live_ = true, log_ = false, by_app_ = false, dirty_ = true;
  int64_t window_ns_ = 15LL * 60 * 1000000000;
  int64_t t0_ = 0, t1_ = 0;                 // paused range
  std::optional<int64_t> y_max_;            // set by Ctrl+wheel; automatic otherwise
  std::optional<Box> selection_;
  std::optional<Box> compare_;
  bool compare_armed_ = false;
  bool drag_compare_ = false;  // the drag in progress selects the baseline
  TimeAxis tx_;
  ValueAxis vy_;
  DensityGrid grid_;
  QImage image_;
  QPoint press_, drag_;
  Qt::MouseButton button_ = Qt::NoButton;
};

}  // namespace txray::viewer
