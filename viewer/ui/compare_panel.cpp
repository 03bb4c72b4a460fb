#include "compare_panel.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "profile_panel.h"

namespace txray::viewer {
namespace {

QTableWidget* make_table(QWidget* parent, const char* name) {
  auto* t = new QTableWidget(parent);
  t->setObjectName(name);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->verticalHeader()->setVisible(false);
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->setWordWrap(false);
  t->horizontalHeader()->setHighlightSections(false);
  return t;
}

// Fills t with a report table; numeric columns (align 'r') right-aligned; contribution columns coloured
// (slower in red, faster in green).
void fill(QTableWidget* t, const report::Table& tb, const QString& align, int delta_col = -1) {
  t->clear();
  t->setColumnCount(static_cast<int>(tb.header.size()));
  t->setRowCount(static_cast<int>(tb.rows.size()));
  QStringList head;
  for (const auto& h : tb.header) head << QString::fromStdString(h);
  t->setHorizontalHeaderLabels(head);
  for (int r = 0; r < static_cast<int>(tb.rows.size()); ++r)
    for (int c = 0; c < static_cast<int>(tb.rows[static_cast<size_t>(r)].size()); ++c) {
      const QString text = QString::fromStdString(tb.rows[static_cast<size_t>(r)][static_cast<size_t>(c)]);
      auto* item = new QTableWidgetItem(text);
      item->setToolTip(text);
      if (c < align.size() && align[c] == 'r') item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (c == delta_col || (delta_col == -2 && c + 1 == static_cast<int>(tb.header.size()))) {
        if (text.startsWith('+')) item->setForeground(QColor(190, 30, 30));
        else if (text.startsWith(QChar(0x2212))) item->setForeground(QColor(20, 130, 60));
      }
      t->setItem(r, c, item);
    }
  t->resizeColumnsToContents();
  for (int c = 0; c < t->columnCount(); ++c) t->setColumnWidth(c, std::min(t->columnWidth(c), 460));
}

QWidget* titled(QWidget* w, const QString& title, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* l = new QVBoxLayout(box);
  l->setContentsMargins(0, 0, 0, 0);
  l->setSpacing(2);
  auto* label = new QLabel(QStringLiteral("<b>%1</b>").arg(title), box);
  l->addWidget(label);
  l->addWidget(w, 1);
  return box;
}

}  // namespace

ComparePanel::ComparePanel(QWidget* parent)
    : QWidget(parent),
      headline_(new QLabel(this)),
      summary_(make_table(this, "compareSummary")),
      parts_(make_table(this, "compareParts")),
      members_(make_table(this, "compareMembers")),
      changes_(make_table(this, "compareChanges")),
      steps_(make_table(this, "compareSteps")),
      examples_(new QLabel(this)),
      base_profile_(new ProfilePanel(this)),
      cur_profile_(new ProfilePanel(this)) {
  headline_->setObjectName("compareHeadline");
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::PlainText);
  QFont f = headline_->font();
  f.setBold(true);
  headline_->setFont(f);
  headline_->setText(tr("No comparison yet: box a group of dots, then Shift+drag a second box (the baseline) "
                        "or use Edit → Compare with…"));
  examples_->setObjectName("compareExamples");
  examples_->setTextFormat(Qt::PlainText);
  examples_->setText(tr("Click a line of the ranking: a representative transaction of each side opens below."));

  auto* top = new QWidget(this);
  auto* tl = new QHBoxLayout(top);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(titled(summary_, tr("Side by side"), top), 4);
  tl->addWidget(titled(parts_, tr("Mean time per transaction"), top), 4);
  tl->addWidget(titled(steps_, tr("Steps per transaction"), top), 3);

  auto* mid = new QWidget(this);
  auto* ml = new QHBoxLayout(mid);
  ml->setContentsMargins(0, 0, 0, 0);
  ml->addWidget(titled(members_, tr("Where the difference comes from (ranked by contribution)"), mid), 3);
  ml->addWidget(titled(changes_, tr("Appeared / vanished"), mid), 1);

  auto* bottom = new QWidget(this);
  auto* bl = new QVBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addWidget(examples_);
  auto* sides = new QSplitter(Qt::Horizontal, bottom);
  sides->addWidget(titled(base_profile_, tr("Baseline example"), sides));
  sides->addWidget(titled(cur_profile_, tr("Current example"), sides));
  bl->addWidget(sides, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(mid);
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 3);
  // Room for the eight rows of the side-by-side tables and about eight ranked members; the rest for the
  // two example profiles.
  split->setSizes({250, 250, 420});
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(4, 4, 4, 4);
  l->addWidget(headline_);
  l->addWidget(split, 1);

  connect(members_, &QTableWidget::cellClicked, this, [this](int row, int) { selectMember(row); });
  connect(base_profile_, &ProfilePanel::openTransaction, this, &ComparePanel::openTransaction);
  connect(cur_profile_, &ProfilePanel::openTransaction, this, &ComparePanel::openTransaction);
}

void ComparePanel::setComparison(ComparisonPtr c) {
  c_ = std::move(c);
  base_profile_->setProfile(nullptr);
  cur_profile_->setProfile(nullptr);
  if (!c_ || !c_->error.empty()) {
    headline_->setText(c_ ? tr("Comparison failed: %1").arg(QString::fromStdString(c_->error)) : QString());
    for (auto* t : {summary_, parts_, members_, changes_, steps_}) t->clear(), t->setRowCount(0), t->setColumnCount(0);
    return;
  }
  const report::CompareRows& r = c_->rows;
  headline_->setText(QString::fromStdString(r.headline));
  headline_->setToolTip(QString::fromStdString(r.filters + "\n\n" + r.notes));
  fill(summary_, r.summary, "lrrr", 3);
  fill(parts_, r.parts, "lrrr", 3);
  fill(members_, r.members, "rllrrrl", 3);
  members_->setColumnWidth(2, std::min(members_->columnWidth(2), 360));  // the examples stay in view
  fill(changes_, r.changes, "lllrrl");
  fill(steps_, r.steps, "lrr");
  members_->setToolTip(QString::fromStdString(r.notes));
  if (!r.members.rows.empty()) {
    members_->selectRow(0);
    selectMember(0);
  }
}

void ComparePanel::selectMember(int row) {
  if (!c_ || !c_->report.has_compare) return;
  const auto& parts = c_->report.compare.parts;
  if (row < 0 || row >= static_cast<int>(parts.size())) return;
  const auto& p = parts[static_cast<size_t>(row)];
  const bool folded = p.folded_members > 0;
  // A folded line, or a member one side does not have: that side's typical transaction (nearest its mean).
  const auto& b = folded || !p.base_example.id ? c_->report.compare.base_typical : p.base_example;
  const auto& u = folded || !p.cur_example.id ? c_->report.compare.cur_typical : p.cur_example;
  examples_->setText(tr("#%1 %2 %3: baseline %4, current %5 (the transaction nearest each side's mean for this "
                        "member%6)")
                         .arg(row + 1)
                         .arg(QString::fromLatin1(report::part_label(p.part)), QString::fromStdString(p.key))
                         .arg(b.id ? QStringLiteral("#%1").arg(b.id) : tr("none"))
                         .arg(u.id ? QStringLiteral("#%1").arg(u.id) : tr("none"))
                         .arg(folded || !p.base_example.id || !p.cur_example.id
                                  ? tr("; where a side has none, its transaction nearest its mean response time")
                                  : QString()));
  emit examplesRequested(b.id, u.id);
}

}  // namespace txray::viewer
