// The step rows of one profile in the X-View layout: NO, START_TIME, GAP, CPU_T, a timeline column
// (painted by the UI from BarRole) and the message, indented by nesting depth.
#pragma once

#include <QAbstractTableModel>

#include <vector>

#include "profile_format.h"
#include "types.h"

Q_DECLARE_METATYPE(txray::viewer::TimelineBar)

namespace txray::viewer {

class ProfileModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kNo, kStartTime, kGap, kCpu, kTimeline, kMessage, kColumns };
  enum Role {
    BarRole = Qt::UserRole + 1,  // TimelineBar of the row
    CalleeRole,                  // qint64 transactions.id of the called transaction, or invalid
    KindRole,                    // step kind string
  };
  // A gap longer than this share of the response time is highlighted.
  static constexpr double kLongGapShare = 0.2;

  explicit ProfileModel(QObject* parent = nullptr);
  void setProfile(ProfilePtr profile);
  const ProfilePtr& profile() const { return profile_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  ProfilePtr profile_;
  std::vector<TimelineBar> bars_;
};

}  // namespace txray::viewer
