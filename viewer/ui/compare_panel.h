// The comparison panel: two selections side by side (counts, percentiles, time per part), the ranked
// decomposition of the difference in mean response time, what appeared or vanished, and, for the member
// line clicked, a representative transaction of each side shown side by side. Every figure is a cell of
// collector/report's compare_rows(), the text `txray report --baseline-*` prints.
#pragma once

#include <QWidget>

#include "comparison.h"

class QLabel;
class QTableWidget;

namespace txray::viewer {

class ProfilePanel;

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  void setComparison(ComparisonPtr c);  // nullptr: empty
  const ComparisonPtr& comparison() const { return c_; }
  // Drill down: the member line `row` of the ranked table (its examples, or the typical transactions of
  // each side for a folded line) → examplesRequested.
  void selectMember(int row);

  QLabel* headline() const { return headline_; }
  QTableWidget* summaryTable() const { return summary_; }
  QTableWidget* partsTable() const { return parts_; }
  QTableWidget* membersTable() const { return members_; }
  QTableWidget* changesTable() const { return changes_; }
  QTableWidget* stepsTable() const { return steps_; }
  ProfilePanel* baselineProfile() const { return base_profile_; }
  ProfilePanel* currentProfile() const { return cur_profile_; }
  QLabel* examplesLabel() const { return examples_; }

 signals:
  void examplesRequested(qint64 baseline_id, qint64 current_id);  // 0: that side has none
  void openTransaction(qint64 id);  // a callee clicked in one of the two profiles: open it in the main view

 private:
  ComparisonPtr c_;
  QLabel* headline_;
  QTableWidget *summary_, *parts_, *members_, *changes_, *steps_;
  QLabel* examples_;
  ProfilePanel *base_profile_, *cur_profile_;
};

}  // namespace txray::viewer
