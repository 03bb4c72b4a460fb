// Helpers for the widget tests: a main window on a store, waiting for its first load.
#pragma once

#include <QDateTime>
#include <QSignalSpy>
#include <QtTest>

#include "main_window.h"
#include "scatter_view.h"

namespace txray::test {

inline int64_t now_ns() { return QDateTime::currentMSecsSinceEpoch() * 1000000; }

// Opens `path` in `w` (already sized), shows it offscreen and waits until every row is loaded.
inline bool open_and_wait(viewer::MainWindow& w, const std::string& path) {
  QSignalSpy loaded(&w, &viewer::MainWindow::loadFinished);
  w.show();
  w.openStore(QString::fromStdString(path));
  return loaded.wait(10000);
}

// Pixel position of a data point on the scatter.
inline QPoint pixel_of(const viewer::ScatterView& s, int64_t t, int64_t e) {
  return QPoint(static_cast<int>(std::lround(s.timeAxis().to_x(t))), static_cast<int>(std::lround(s.valueAxis().to_y(e))));
}

}  // namespace txray::test
