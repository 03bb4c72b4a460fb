// The transaction list with its filter bar (application, name text, minimum response time, errors only).
#pragma once

#include <QWidget>

#include "transaction_list_model.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableView;

namespace txray::viewer {

class ListPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ListPanel(QWidget* parent = nullptr);
  TransactionListModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  void setRows(TxListPtr rows, const std::vector<std::string>& apps);
  void selectRow(int row);
  // Selects the slowest row shown (the list is sorted by response time first).
  void selectSlowest();

 signals:
  void transactionSelected(qint64 id);

 private:
  void applyFilter();

  TransactionListModel* model_;
  QTableView* view_;
  QComboBox* app_;
  QLineEdit* name_;
  QSpinBox* min_ms_;
  QCheckBox* errors_;
  QLabel* count_;
};

}  // namespace txray::viewer
