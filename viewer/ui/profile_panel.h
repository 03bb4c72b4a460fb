// The profile of one transaction: X-View header, step rows with the timeline column, and links to the
// callee (click an HTTP_CALL row) and the caller.
#pragma once

#include <QWidget>

#include "profile_model.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;
class QSplitter;
class QLabel;

namespace txray::viewer {

class ProfilePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProfilePanel(QWidget* parent = nullptr);
  ProfileModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QString headerText() const;
  void setProfile(ProfilePtr profile);
  // The whole profile as text (what Copy puts on the clipboard).
  QString profileText() const;
  // What the stack pane shows (the selected row's stack, one frame per line).
  QString stackText() const;
  QPlainTextEdit* stackView() const { return stack_; }
  // Profile rows | CPU samples | stack: the main window saves and restores its state per user.
  QSplitter* splitter() const { return split_; }
  void copyToClipboard() const;

 signals:
  void openTransaction(qint64 id);  // a callee or the caller was clicked
  void backRequested();

 private:
  ProfileModel* model_;
  QPlainTextEdit* header_;
  QTableView* view_;
  QPushButton* caller_;
  QPlainTextEdit* stack_;  // the selected row's stack (failed or slow steps; docs/stacks.md)
  void showStackOf(int row);
  // CPU samples: the selected row's hot functions (the row with most samples until one is selected), and
  // the whole transaction's flame graph.
  void showHot(int row);
  QLabel* hot_title_;
  QPlainTextEdit* hot_;
  class FlameView* flame_;
  QWidget* cpu_box_;
  QSplitter* split_;

 public:
  QString hotText() const;
  class FlameView* flameView() const { return flame_; }
};

}  // namespace txray::viewer
