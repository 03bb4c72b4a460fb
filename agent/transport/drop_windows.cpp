#include "transport/drop_windows.h"

#include "cpu/clock.h"

namespace txray::transport {

void DropWindows::update(Counters& c, uint64_t mono_now, bool ending) {
  for (int r = 0; r < kDropReasons; ++r) {
    Open& o = open_[r];
    DropStamps& st = c.stamps[r];
    uint64_t count = c.dropped(DropReason(r)).load(std::memory_order_acquire);
    if (count == o.seen && o.index < 0) continue;
    if (count != o.seen) {
      o.seen = count;
      o.changed_ns = mono_now;
    }
    if (o.index < 0) {
      if (count <= o.base) continue;
      o.index = int(riding_.size());
      DropWindow w;
      w.seq = ++seq_;
      w.reason = DropReason(r);
      riding_.push_back(w);
      delivery_.push_back({});
    }
    DropWindow& w = riding_[o.index];
    uint64_t first = st.first_ns.load(std::memory_order_relaxed), last = st.last_ns.load(std::memory_order_relaxed);
    // A drop racing with the last close may have had its stamps cleared: it happened at that close.
    if (!first) first = closed_at_unix_ns_ ? closed_at_unix_ns_ : last;
    if (w.first_unix_ns == 0 || (first && first < w.first_unix_ns)) w.first_unix_ns = first;
    if (last > w.last_unix_ns) w.last_unix_ns = last;
    if (w.last_unix_ns < w.first_unix_ns) w.last_unix_ns = w.first_unix_ns;
    if (count - o.base != w.count) {
      w.count = count - o.base;
      changed_ = true;
    }
    if (!ending && (mono_now - o.changed_ns < kQuietNs || closed_ >= kMaxClosed)) continue;
    // Quiet for a second (or the process ends): close. Stamps of a drop that comes from now on belong to the next window.
    closed_at_unix_ns_ = clock::unix_ns();
    st.first_ns.store(0, std::memory_order_relaxed);
    st.last_ns.store(0, std::memory_order_relaxed);
    uint64_t now_count = c.dropped(DropReason(r)).load(std::memory_order_acquire);
    if (now_count != count) {  // one came meanwhile, at the close: it is this window's last
      w.count = now_count - o.base;
      w.last_unix_ns = closed_at_unix_ns_;
      count = now_count;
      o.seen = now_count;
    }
    w.closed = true;
    o.base = count;
    o.index = -1;
    ++closed_;
    changed_ = true;
  }
}

void DropWindows::delivered(uint64_t mono_now) {
  changed_ = false;
  size_t keep = 0;
  for (size_t i = 0; i < riding_.size(); ++i) {
    Delivery& d = delivery_[i];
    if (riding_[i].closed) {
      if (d.sent++ == 0) d.first_ns = mono_now;
      if (d.sent >= 2 && mono_now - d.first_ns >= kDeliverNs) {
        --closed_;
        continue;  // retired
      }
    }
    if (keep != i) {
      riding_[keep] = riding_[i];
      delivery_[keep] = delivery_[i];
      for (Open& o : open_)
        if (o.index == int(i)) o.index = int(keep);
    }
    ++keep;
  }
  riding_.resize(keep);
  delivery_.resize(keep);
}

}  // namespace txray::transport
