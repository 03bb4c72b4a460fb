// The profile of one transaction: X-View header, step rows with the timeline column, and links to the
// callee (click an HTTP_CALL row) and the caller.
#pragma once

#include <QWidget>

#include "profile_model.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;

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
  void copyToClipboard() const;

 signals:
  void openTransaction(qint64 id);  // a callee or the caller was clicked
  void backRequested();

 private:
  ProfileModel* model_;
  QPlainTextEdit* header_;
  QTableView* view_;
  QPushButton* caller_;
};

}  // namespace txray::viewer
