#include "list_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

namespace txray::viewer {

ListPanel::ListPanel(QWidget* parent)
    : QWidget(parent),
      model_(new TransactionListModel(this)),
      view_(new QTableView(this)),
      app_(new QComboBox(this)),
      name_(new QLineEdit(this)),
      min_ms_(new QSpinBox(this)),
      errors_(new QCheckBox(tr("Errors only"), this)),
      count_(new QLabel(this)) {
  app_->setObjectName("appFilter");
  name_->setObjectName("nameFilter");
  min_ms_->setObjectName("minResponse");
  errors_->setObjectName("errorsOnly");
  view_->setObjectName("transactionList");
  app_->addItem(tr("All applications"));
  name_->setPlaceholderText(tr("name contains…"));
  name_->setClearButtonEnabled(true);
  min_ms_->setRange(0, 10000000);
  min_ms_->setSuffix(tr(" ms"));
  min_ms_->setPrefix(tr("≥ "));
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(0, 0, 0, 0);
  bar->addWidget(app_);
  bar->addWidget(name_, 1);
  bar->addWidget(min_ms_);
  bar->addWidget(errors_);
  bar->addWidget(count_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(view_);

  view_->setModel(model_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(TransactionListModel::kResponse, Qt::DescendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setWordWrap(false);
  // Wide enough for the title or a typical value, whichever is wider.
  const char* samples[] = {"00:00:00 000", "payments", "POST /json/GetCustomers", "", "", "", "", "", "", "HTTP 500: upstream timed", "10.1.1.1:55555"};
  const QFontMetrics fm(view_->font());
  for (int c = 0; c < TransactionListModel::kColumns; ++c)
    view_->setColumnWidth(c, std::max(fm.horizontalAdvance(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString()),
                                      fm.horizontalAdvance(QString::fromLatin1(samples[c]))) + 24);

  connect(app_, &QComboBox::currentIndexChanged, this, &ListPanel::applyFilter);
  connect(name_, &QLineEdit::textChanged, this, &ListPanel::applyFilter);
  connect(min_ms_, &QSpinBox::valueChanged, this, &ListPanel::applyFilter);
  connect(errors_, &QCheckBox::toggled, this, &ListPanel::applyFilter);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (cur.isValid()) emit transactionSelected(cur.data(TransactionListModel::IdRole).toLongLong());
  });
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    count_->setText(tr("%1 of %2").arg(model_->rowCount()).arg(model_->totalRows()));
  });
}

void ListPanel::setRows(TxListPtr rows, const std::vector<std::string>& apps) {
  const QString current = app_->currentIndex() > 0 ? app_->currentText() : QString();
  {
    const QSignalBlocker block(app_);
    app_->clear();
    app_->addItem(tr("All applications"));
    for (const auto& a : apps) app_->addItem(QString::fromStdString(a));
    const int keep = app_->findText(current);
    app_->setCurrentIndex(keep > 0 ? keep : 0);
  }
  model_->setRows(std::move(rows));
}

void ListPanel::applyFilter() {
  ListFilter f;
  if (app_->currentIndex() > 0) f.app = app_->currentText().toStdString();
  f.name_contains = name_->text().toStdString();
  f.min_elapsed_ns = static_cast<int64_t>(min_ms_->value()) * 1000000;
  f.errors_only = errors_->isChecked();
  model_->setFilter(f);
}

void ListPanel::selectRow(int row) {
  if (row < 0 || row >= model_->rowCount()) return;
  view_->setCurrentIndex(model_->index(row, 0));
  view_->scrollTo(model_->index(row, 0));
}

void ListPanel::selectSlowest() {
  int best = -1;
  int64_t slowest = -1;
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->summary(r).elapsed_ns > slowest) {
      slowest = model_->summary(r).elapsed_ns;
      best = r;
    }
  selectRow(best);
}

}  // namespace txray::viewer
