#include "profile_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace txray::viewer {

ProfileModel::ProfileModel(QObject* parent) : QAbstractTableModel(parent) {}

void ProfileModel::setProfile(ProfilePtr profile) {
  beginResetModel();
  profile_ = std::move(profile);
  bars_ = profile_ ? timeline_layout(*profile_) : std::vector<TimelineBar>{};
  endResetModel();
  emit headerDataChanged(Qt::Horizontal, kTimeline, kTimeline);
}

int ProfileModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !profile_ ? 0 : static_cast<int>(profile_->steps.size());
}

int ProfileModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant ProfileModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumns) return {};
  const Step& s = profile_->steps[static_cast<size_t>(index.row())];
  const int c = index.column();
  const bool long_gap = s.gap_ns > kLongGapShare * static_cast<double>(profile_->tx.elapsed_ns) && s.gap_ns > 0;
  switch (role) {
    case Qt::DisplayRole:
      switch (c) {
        case kNo: return QString::asprintf("%04d", s.no);
        case kStartTime: return QString::fromStdString(clock_ms(profile_->start_ns + s.start_offset_ns));
        case kGap: return QString::fromStdString(format_ms(s.gap_ns));
        case kCpu: return QString::fromStdString(format_ms(s.cpu_ns));
        case kTimeline: return {};
        case kMessage: return QString(s.depth * 4, QLatin1Char(' ')) + QString::fromStdString(step_message(s));
      }
      break;
    case BarRole: return QVariant::fromValue(bars_[static_cast<size_t>(index.row())]);
    case CalleeRole: return s.callee_tx_id ? QVariant::fromValue<qint64>(*s.callee_tx_id) : QVariant();
    case KindRole: return QString::fromStdString(s.kind);
    case Qt::TextAlignmentRole:
      if (c == kGap || c == kCpu) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case Qt::BackgroundRole:
      if ((c == kGap || c == kCpu) && long_gap) return QBrush(QColor(255, 214, 153));
      break;
    case Qt::ForegroundRole:
      if (!s.error.empty()) return QBrush(QColor(190, 20, 20));
      if (c == kMessage && s.callee_tx_id) return QBrush(QColor(20, 70, 200));
      break;
    case Qt::FontRole:
      if (c == kMessage && s.callee_tx_id) {
        QFont f;
        f.setUnderline(true);
        return f;
      }
      break;
    case Qt::ToolTipRole:
      if (c == kMessage && s.callee_tx_id) return QStringLiteral("Click to open the callee's transaction");
      if (c == kTimeline || c == kGap || c == kCpu)
        return QStringLiteral("GAP %1 ms, CPU %2 ms (%3 %)")
            .arg(QString::fromStdString(format_ms(s.gap_ns)), QString::fromStdString(format_ms(s.cpu_ns)))
            .arg(s.gap_ns ? 100.0 * static_cast<double>(s.cpu_ns) / static_cast<double>(s.gap_ns) : 0.0, 0, 'f', 0);
      break;
  }
  return {};
}

QVariant ProfileModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case kNo: return QStringLiteral("NO");
    case kStartTime: return QStringLiteral("START_TIME");
    case kGap: return QStringLiteral("GAP");
    case kCpu: return QStringLiteral("CPU_T");
    case kTimeline:
      return profile_ ? QStringLiteral("timeline 0 - %1 ms").arg(QString::fromStdString(format_ms(profile_->tx.elapsed_ns)))
                      : QStringLiteral("timeline");
    case kMessage: return QStringLiteral("message");
  }
  return {};
}

}  // namespace txray::viewer
