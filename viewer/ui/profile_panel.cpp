#include "profile_panel.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "profile_format.h"
#include "timeline_delegate.h"

namespace txray::viewer {

ProfilePanel::ProfilePanel(QWidget* parent)
    : QWidget(parent),
      model_(new ProfileModel(this)),
      header_(new QPlainTextEdit(this)),
      view_(new QTableView(this)),
      caller_(new QPushButton(tr("Caller"), this)),
      stack_(new QPlainTextEdit(this)) {
  view_->setObjectName("profileSteps");
  header_->setObjectName("profileHeader");
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  header_->setReadOnly(true);
  header_->setFont(mono);
  header_->setLineWrapMode(QPlainTextEdit::NoWrap);
  header_->setPlaceholderText(tr("Drag a box around dots on the scatter, then pick a transaction in the list."));
  header_->setFixedHeight(QFontMetrics(mono).lineSpacing() * 13 + 10);

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

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(buttons);
  layout->addWidget(header_);
  layout->addWidget(view_, 1);
  stack_->setObjectName("profileStack");
  stack_->setReadOnly(true);
  stack_->setFont(mono);
  stack_->setLineWrapMode(QPlainTextEdit::NoWrap);
  stack_->setPlaceholderText(tr("Select a row: a failed or slow step shows the stack that made the call."));
  stack_->setFixedHeight(QFontMetrics(mono).lineSpacing() * 9 + 10);
  layout->addWidget(stack_);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showStackOf(current.isValid() ? current.row() : -1); });

  connect(back, &QPushButton::clicked, this, &ProfilePanel::backRequested);
  connect(copy, &QPushButton::clicked, this, &ProfilePanel::copyToClipboard);
  connect(caller_, &QPushButton::clicked, this, [this] {
    if (model_->profile() && model_->profile()->caller_tx_id) emit openTransaction(*model_->profile()->caller_tx_id);
  });
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const QVariant callee = index.siblingAtColumn(ProfileModel::kMessage).data(ProfileModel::CalleeRole);
    if (callee.isValid()) emit openTransaction(callee.toLongLong());
  });
}

void ProfilePanel::setProfile(ProfilePtr profile) {
  header_->setPlainText(profile ? QString::fromStdString(profile_header(*profile)) : QString());
  caller_->setEnabled(profile && profile->caller_tx_id);
  model_->setProfile(std::move(profile));
  showStackOf(-1);
}

void ProfilePanel::showStackOf(int row) {
  const Profile* p = model_->profile().get();
  if (!p || row < 0 || row >= static_cast<int>(p->steps.size())) {
    stack_->clear();
    return;
  }
  const Step& s = p->steps[static_cast<size_t>(row)];
  stack_->setPlainText(s.stack.empty() ? QString()
                                       : QString::fromStdString("stack of row " + std::to_string(s.no) + ":\n" +
                                                                stack_text(s)));
}

QString ProfilePanel::stackText() const { return stack_->toPlainText(); }

QString ProfilePanel::headerText() const { return header_->toPlainText(); }

QString ProfilePanel::profileText() const {
  return model_->profile() ? QString::fromStdString(profile_text(*model_->profile())) : QString();
}

void ProfilePanel::copyToClipboard() const {
  if (model_->profile()) QApplication::clipboard()->setText(profileText());
}

}  // namespace txray::viewer
