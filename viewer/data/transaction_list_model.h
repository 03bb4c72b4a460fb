// The transaction list: the rows of a box on the scatter, filtered (application, name text, minimum
// response time, errors only) and sorted here rather than in a proxy, so that 100,000 rows sort with one
// std::stable_sort over an index vector.
#pragma once

#include <QAbstractTableModel>

#include <string>
#include <vector>

#include "types.h"

namespace txray::viewer {

struct ListFilter {
  std::string app;            // exact application; empty = all
  std::string name_contains;  // case-insensitive substring of the name; empty = all
  int64_t min_elapsed_ns = 0;
  bool errors_only = false;
  bool accepts(const TxSummary& r) const;
};

class TransactionListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kEnd, kApp, kName, kResponse, kCpu, kSql, kFetch, kCall, kStatus, kError, kClient, kColumns };
  enum Role { IdRole = Qt::UserRole + 1, SortRole };

  explicit TransactionListModel(QObject* parent = nullptr);

  void setRows(TxListPtr rows);
  void setFilter(const ListFilter& filter);
  const ListFilter& filter() const { return filter_; }
  int totalRows() const { return rows_ ? static_cast<int>(rows_->size()) : 0; }
  const TxSummary& summary(int row) const { return (*rows_)[static_cast<size_t>(visible_[static_cast<size_t>(row)])]; }
  // Row showing transaction `id`, or -1.
  int rowOf(int64_t id) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  void sort(int column, Qt::SortOrder order) override;

 private:
  void rebuild();  // filter, then sort, into visible_

  TxListPtr rows_;
  std::vector<int> visible_;
  ListFilter filter_;
  int sort_column_ = kResponse;
  Qt::SortOrder sort_order_ = Qt::DescendingOrder;
};

}  // namespace txray::viewer
