#include "transaction_list_model.h"

#include <QBrush>
#include <QColor>

#include <algorithm>
#include <cctype>

#include "profile_format.h"

namespace txray::viewer {

namespace {
bool contains_nocase(const std::string& hay, const std::string& needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != hay.end();
}

bool is_error(const TxSummary& r) { return !r.error.empty() || r.status >= 500; }

// Strict weak order of two rows on a column (ties broken by id, so sorting is deterministic).
bool less_on(int column, const TxSummary& a, const TxSummary& b) {
  auto tie = [&](auto x, auto y) { return x != y ? x < y : a.id < b.id; };
  switch (column) {
    case TransactionListModel::kEnd: return tie(a.end_ns, b.end_ns);
    case TransactionListModel::kApp: return a.app != b.app ? a.app < b.app : a.id < b.id;
    case TransactionListModel::kName: return a.name != b.name ? a.name < b.name : a.id < b.id;
    case TransactionListModel::kResponse: return tie(a.elapsed_ns, b.elapsed_ns);
    case TransactionListModel::kCpu: return tie(a.cpu_ns, b.cpu_ns);
    case TransactionListModel::kSql: return tie(a.sql_ns, b.sql_ns);
    case TransactionListModel::kFetch: return tie(a.fetch_ns, b.fetch_ns);
    case TransactionListModel::kCall: return tie(a.call_ns, b.call_ns);
    case TransactionListModel::kStatus: return tie(a.status, b.status);
    case TransactionListModel::kError: return a.error != b.error ? a.error < b.error : a.id < b.id;
    case TransactionListModel::kClient: return a.client != b.client ? a.client < b.client : a.id < b.id;
  }
  return a.id < b.id;
}
}  // namespace

bool ListFilter::accepts(const TxSummary& r) const {
  if (!app.empty() && r.app != app) return false;
  if (r.elapsed_ns < min_elapsed_ns) return false;
  if (errors_only && !is_error(r)) return false;
  if (!name_contains.empty() && !contains_nocase(r.name, name_contains)) return false;
  return true;
}

TransactionListModel::TransactionListModel(QObject* parent) : QAbstractTableModel(parent) {}

void TransactionListModel::setRows(TxListPtr rows) {
  beginResetModel();
  rows_ = std::move(rows);
  rebuild();
  endResetModel();
}

void TransactionListModel::setFilter(const ListFilter& filter) {
  beginResetModel();
  filter_ = filter;
  rebuild();
  endResetModel();
}

void TransactionListModel::sort(int column, Qt::SortOrder order) {
  if (column < 0 || column >= kColumns) return;
  emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
  const QModelIndexList before = persistentIndexList();
  std::vector<int64_t> ids;
  for (const auto& i : before) ids.push_back(summary(i.row()).id);
  sort_column_ = column;
  sort_order_ = order;
  rebuild();
  QModelIndexList after;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int row = rowOf(ids[k]);
    after.push_back(row < 0 ? QModelIndex() : index(row, before[static_cast<int>(k)].column()));
  }
  changePersistentIndexList(before, after);
  emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

void TransactionListModel::rebuild() {
  visible_.clear();
  if (!rows_) return;
  const auto& rows = *rows_;
  visible_.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    if (filter_.accepts(rows[i])) visible_.push_back(static_cast<int>(i));
  const int col = sort_column_;
  if (sort_order_ == Qt::AscendingOrder)
    std::sort(visible_.begin(), visible_.end(),
              [&](int a, int b) { return less_on(col, rows[static_cast<size_t>(a)], rows[static_cast<size_t>(b)]); });
  else
    std::sort(visible_.begin(), visible_.end(),
              [&](int a, int b) { return less_on(col, rows[static_cast<size_t>(b)], rows[static_cast<size_t>(a)]); });
}

int TransactionListModel::rowOf(int64_t id) const {
  for (size_t i = 0; i < visible_.size(); ++i)
    if ((*rows_)[static_cast<size_t>(visible_[i])].id == id) return static_cast<int>(i);
  return -1;
}

int TransactionListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(visible_.size());
}

int TransactionListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant TransactionListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumns) return {};
  const TxSummary& r = summary(index.row());
  const int c = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (c) {
        case kEnd: return QString::fromStdString(clock_ms(r.end_ns));
        case kApp: return QString::fromStdString(r.app);
        case kName: return QString::fromStdString(r.name);
        case kResponse: return QString::fromStdString(format_ms(r.elapsed_ns));
        case kCpu: return QString::fromStdString(format_ms(r.cpu_ns));
        case kSql: return QString::fromStdString(format_ms(r.sql_ns));
        case kFetch: return QString::fromStdString(format_ms(r.fetch_ns));
        case kCall: return QString::fromStdString(format_ms(r.call_ns));
        case kStatus: return r.status;
        case kError: return QString::fromStdString(r.error);
        case kClient: return QString::fromStdString(r.client);
      }
      break;
    case SortRole:
      switch (c) {
        case kEnd: return QVariant::fromValue<qint64>(r.end_ns);
        case kResponse: return QVariant::fromValue<qint64>(r.elapsed_ns);
        case kCpu: return QVariant::fromValue<qint64>(r.cpu_ns);
        case kSql: return QVariant::fromValue<qint64>(r.sql_ns);
        case kFetch: return QVariant::fromValue<qint64>(r.fetch_ns);
        case kCall: return QVariant::fromValue<qint64>(r.call_ns);
        default: return data(index, Qt::DisplayRole);
      }
    case IdRole: return QVariant::fromValue<qint64>(r.id);
    case Qt::TextAlignmentRole:
      if (c >= kResponse && c <= kStatus) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case Qt::ForegroundRole:
      if (is_error(r)) return QBrush(QColor(190, 20, 20));
      break;
    case Qt::ToolTipRole:
      if (c == kError || c == kName) return QString::fromStdString(r.name + (r.error.empty() ? "" : "\n" + r.error));
      break;
  }
  return {};
}

QVariant TransactionListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  static const char* kTitles[kColumns] = {"End time", "Application", "Name",   "Response ms", "CPU ms", "SQL ms",
                                          "Fetch ms", "Call ms",     "Status", "Error",       "Client"};
  return section >= 0 && section < kColumns ? QString::fromLatin1(kTitles[section]) : QVariant();
}

}  // namespace txray::viewer
