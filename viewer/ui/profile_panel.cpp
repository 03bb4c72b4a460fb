#include "profile_panel.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "flame_graph.h"
#include "flame_view.h"
#include "profile_format.h"
#include "timeline_delegate.h"

namespace txray::viewer {

ProfilePanel::ProfilePanel(QWidget* parent)
    : QWidget(parent),
      model_(new ProfileModel(this)),
      header_(new QPlainTextEdit(this)),
      view_(new QTableView(this)),
      caller_(new QPushButton(tr("Caller"), this)),
      stack_(new QPlainTextEdit(this)),
      hot_title_(new QLabel(this)),
      hot_(new QPlainTextEdit(this)),
      flame_(new FlameView(this)),
      cpu_box_(new QWidget(this)),
      split_(new QSplitter(Qt::Vertical, this)) {
  view_->setObjectName("profileSteps");
  header_->setObjectName("profileHeader");
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  header_->setReadOnly(true);
  header_->setFont(mono);
  header_->setLineWrapMode(QPlainTextEdit::NoWrap);
  header_->setPlaceholderText(tr("Drag a box around dots on the scatter, then pick a transaction in the list."));
  // Nine lines (TXID to SQL; the rest scrolls): the profile's rows are what the viewer is for.
  header_->setFixedHeight(QFontMetrics(mono).lineSpacing() * 9 + 10);

  auto* back = new QPushButton(tr("Back"), this);
  auto* copy = new QPushButton(tr("Copy profile"), this);
  back->setToolTip(tr("Previous transaction (Alt+Left)"));
  caller_->setToolTip(tr("Open the transaction that called this one"));
  caller_->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->setContentsMargins(0, 0, 0, 0);
  buttons->addWidget(back);
  buttons->addWidget(caller_);
  buttons->addStretch(1);
  buttons->addWidget(copy);

  view_->setModel(model_);
  view_->setFont(mono);
  view_->setItemDelegateForColumn(ProfileModel::kTimeline, new TimelineDelegate(view_));
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->verticalHeader()->setDefaultSectionSize(QFontMetrics(mono).height() + 6);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setWordWrap(false);
  view_->setShowGrid(false);
  const QFontMetrics fm(mono);
  view_->setColumnWidth(ProfileModel::kNo, fm.horizontalAdvance("00000") + 10);
  view_->setColumnWidth(ProfileModel::kStartTime, fm.horizontalAdvance("00:00:00 000") + 12);
  view_->setColumnWidth(ProfileModel::kGap, fm.horizontalAdvance("00,000") + 12);
  view_->setColumnWidth(ProfileModel::kCpu, fm.horizontalAdvance("00,000") + 12);
  view_->setColumnWidth(ProfileModel::kTimeline, 220);

  hot_->setObjectName("hotFunctions");
  hot_->setReadOnly(true);
  hot_->setFont(mono);
  hot_->setLineWrapMode(QPlainTextEdit::NoWrap);
  auto* hot_col = new QVBoxLayout;
  hot_col->setContentsMargins(0, 0, 0, 0);
  hot_col->addWidget(hot_title_);
  hot_col->addWidget(hot_, 1);
  auto* flame_col = new QVBoxLayout;
  flame_col->setContentsMargins(0, 0, 0, 0);
  flame_col->addWidget(new QLabel(tr("Flame graph of the transaction's CPU samples"), this));
  flame_col->addWidget(flame_, 1);
  auto* cpu_row = new QHBoxLayout(cpu_box_);
  cpu_row->setContentsMargins(0, 0, 0, 0);
  cpu_row->addLayout(hot_col, 1);
  cpu_row->addLayout(flame_col, 2);
  cpu_box_->setVisible(false);

  // Rows, CPU samples and the stack share one splitter, the rows taking what the other two leave: at
  // 1600x1000 at least 15 rows are visible (tests/viewer/test_viewer_layout.cpp).
  split_->addWidget(view_);
  split_->addWidget(cpu_box_);
  split_->setStretchFactor(0, 1);
  split_->setStretchFactor(1, 0);
  split_->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(buttons);
  layout->addWidget(header_);
  layout->addWidget(split_, 1);
  stack_->setObjectName("profileStack");
  stack_->setReadOnly(true);
  stack_->setFont(mono);
  stack_->setLineWrapMode(QPlainTextEdit::NoWrap);
  stack_->setPlaceholderText(tr("Select a row: a failed or slow step shows the stack that made the call."));
  stack_->setMinimumHeight(QFontMetrics(mono).lineSpacing() * 2 + 10);
  split_->addWidget(stack_);
  split_->setStretchFactor(2, 0);
  const int line = QFontMetrics(mono).lineSpacing();
  // The CPU pane tall enough for a flame graph a dozen frames deep to keep its labels (11 px a level).
  split_->setSizes({line * 30, line * 12, line * 3 + 10});
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showStackOf(current.isValid() ? current.row() : -1); });

  connect(back, &QPushButton::clicked, this, &ProfilePanel::backRequested);
  connect(copy, &QPushButton::clicked, this, &ProfilePanel::copyToClipboard);
  connect(caller_, &QPushButton::clicked, this, [this] {
    if (model_->profile() && model_->profile()->caller_tx_id) emit openTransaction(*model_->profile()->caller_tx_id);
  });
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showHot(current.isValid() ? current.row() : -1); });
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const QVariant callee = index.siblingAtColumn(ProfileModel::kMessage).data(ProfileModel::CalleeRole);
    if (callee.isValid()) emit openTransaction(callee.toLongLong());
  });
}

void ProfilePanel::setProfile(ProfilePtr profile) {
  header_->setPlainText(profile ? QString::fromStdString(profile_header(*profile)) : QString());
  caller_->setEnabled(profile && profile->caller_tx_id);
  const bool cpu = profile && profile->cpu_samples > 0;
  flame_->setStacks(cpu ? profile->cpu_stacks : std::vector<CpuStack>{});
  cpu_box_->setVisible(cpu);
  model_->setProfile(std::move(profile));
  showHot(-1);
  showStackOf(-1);
}

void ProfilePanel::showStackOf(int row) {
  const Profile* p = model_->profile().get();
  if (!p || row < 0 || row >= static_cast<int>(p->steps.size())) {
    stack_->clear();
    stack_->setToolTip({});
    return;
  }
  const Step& s = p->steps[static_cast<size_t>(row)];
  // The frames read in their short form; the hover shows the full names.
  stack_->setToolTip(QString::fromStdString(stack_text(s, true)));
  stack_->setPlainText(s.stack.empty() ? QString()
                                       : QString::fromStdString("stack of row " + std::to_string(s.no) + ":\n" +
                                                                stack_text(s)));
}

QString ProfilePanel::stackText() const { return stack_->toPlainText(); }

void ProfilePanel::showHot(int row) {
  const auto& p = model_->profile();
  if (!p) {
    hot_title_->clear();
    hot_->clear();
    return;
  }
  if (row < 0 || row >= int(p->steps.size()) || p->steps[size_t(row)].cpu_samples == 0) {
    // Nothing (or a row without samples) selected: the row with the most samples.
    int best = -1;
    for (size_t i = 0; i < p->steps.size(); ++i)
      if (p->steps[i].cpu_samples > 0 && (best < 0 || p->steps[i].cpu_samples > p->steps[size_t(best)].cpu_samples))
        best = int(i);
    if (row >= 0 && row < int(p->steps.size())) {
      hot_title_->setText(tr("Row %1: no CPU samples in its GAP").arg(p->steps[size_t(row)].no));
      hot_->clear();
      return;
    }
    row = best;
  }
  if (row < 0) {
    hot_title_->clear();
    hot_->clear();
    return;
  }
  const Step& s = p->steps[size_t(row)];
  hot_title_->setText(tr("Hot functions of row %1 (%2 samples in its GAP)").arg(s.no).arg(s.cpu_samples));
  hot_->setPlainText(QString::fromStdString(hot_functions_text(s)));
  hot_->setToolTip(QString::fromStdString(hot_functions_text(s, true)));
}

QString ProfilePanel::hotText() const { return hot_title_->text() + "\n" + hot_->toPlainText(); }

QString ProfilePanel::headerText() const { return header_->toPlainText(); }

QString ProfilePanel::profileText() const {
  return model_->profile() ? QString::fromStdString(profile_text(*model_->profile())) : QString();
}

void ProfilePanel::copyToClipboard() const {
  if (model_->profile()) QApplication::clipboard()->setText(profileText());
}

}  // namespace txray::viewer
