// The viewer's main window: scatter on top; transaction list and profile below. Owns the StoreSession
// (worker thread) and the PointSet; wires them to the widgets, menus, status bar and QSettings.
#pragma once

#include <QMainWindow>
#include <QTimer>

#include <vector>

#include "loader.h"
#include "point_set.h"

class QLabel;
class QMenu;
class QSplitter;
class QActionGroup;
class QTabWidget;

namespace txray::viewer {

class ComparePanel;
class ListPanel;
class ProfilePanel;
class ScatterView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // restore_settings = false: ignore the saved window state (screenshots and tests look the same everywhere).
  explicit MainWindow(bool restore_settings = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  void openStore(const QString& path);
  // Shows the profile of transaction `id` (a store id), as a click on its dot does.
  void openTransaction(qint64 id) { openProfile(id, true); }
  // Selects every dot of the current view as the box (Edit > Select all in view).
  void selectAllInView();
  // Shows `box` on the scatter and fills the list with its transactions (as a mouse drag does). A box
  // of more than maxListRows() dots lists the slowest that many (the status bar says so).
  void selectBox(const Box& box);
  // Compares the box (the current group) with `baseline` (as a Shift+drag does): the Comparison tab
  // shows collector/report's comparison of the two (comparisonShown). Needs a box.
  void compareWith(const Box& baseline);
  // Edit > Compare with…: the next left drag on the scatter selects the baseline.
  void armCompare();
  size_t maxListRows() const { return max_list_rows_; }
  void setMaxListRows(size_t n) { max_list_rows_ = n; }

  ScatterView* scatter() const { return scatter_; }
  ListPanel* list() const { return list_; }
  ProfilePanel* profile() const { return profile_; }
  ComparePanel* comparePanel() const { return compare_; }
  QTabWidget* lowerTabs() const { return tabs_; }
  const PointSet& points() const { return points_; }
  StoreSession* session() const { return session_; }
  QString storePath() const { return path_; }
  QString statusText() const;
  // File > Export report… without the dialog: writes `txray report` to `out` (format from the suffix:
  // .md, .json, else HTML) on a background thread; reportWritten tells the outcome. False when the
  // viewer was built without collector/report.
  bool exportReportTo(const QString& out);
  // Poll interval for new rows (live mode); default 500 ms.
  void setPollInterval(int ms) { poll_timer_.setInterval(ms); }

 signals:
  void loadFinished();            // the first load of a store completed (all rows then present)
  void pointsAdded(qint64 total); // a batch of rows was merged into the scatter
  void listFilled(int rows);      // the list shows the result of the latest box
  void profileShown(qint64 id);   // the profile pane shows transaction id
  void storeFailed(const QString& message);
  void reportWritten(const QString& path, const QString& error);  // error empty on success
  void comparisonShown();         // the comparison panel shows the latest comparison
  void examplesShown();           // both example profiles of the comparison panel are loaded

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildMenus();
  void openProfile(qint64 id, bool remember);
  void onBox(const Box& box);
  void updateStatus();
  void updateRecentMenu();
  void addRecent(const QString& path);
  void exportReport();

  StoreSession* session_;
  PointSet points_;
  ScatterView* scatter_;
  ListPanel* list_;
  ProfilePanel* profile_;
  ComparePanel* compare_;
  QTabWidget* tabs_;
  QSplitter* vsplit_;
  QSplitter* hsplit_;
  QLabel* status_;
  QMenu* recent_menu_ = nullptr;
  QTimer poll_timer_;
  QString path_;
  QString error_;  // the last store error, shown in the status bar
  bool first_load_done_ = false;
  int box_request_ = 0, profile_request_ = 0;
  int compare_request_ = 0, base_example_request_ = 0, cur_example_request_ = 0;
  int examples_pending_ = 0;
  int64_t box_count_ = 0;
  int64_t list_floor_ns_ = 0;
  size_t max_list_rows_ = 200000;  // > 0 when a big box lists only its dots at least this slow
  qint64 shown_id_ = 0;
  std::vector<qint64> history_;
};

}  // namespace txray::viewer
