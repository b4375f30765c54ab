#include "transport/shm/store_chooser.h"

#include <bit>

namespace korovod::shm {
int StoreChooser::size_class(int64_t bytes) {
  return bytes <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<uint64_t>(bytes)) - 1);
}

bool StoreChooser::streaming(int64_t bytes, bool published_favoured) {
  if (mode_ != SlotStores::kAuto) return mode_ == SlotStores::kStreaming;
  const int64_t call = classes_[size_class(bytes)].calls++;
  // Each way twice first, alternating: the first call of a size also pays for first touches
  // (pages of a new buffer, cold caches), and a way's cost is its least call, so its second
  // call is what counts.
  if (call < kFirstCalls) return call % 2 == 1;
  return call % explore_every_ == explore_every_ - 1 ? !published_favoured : published_favoured;
}

double StoreChooser::least(const std::array<double, kWindow>& recent) {
  double best = 0;
  for (double c : recent) {
    if (c > 0 && (best == 0 || c < best)) best = c;
  }
  return best;
}

bool StoreChooser::favoured(int64_t bytes) const {
  const double cached = cost(false, bytes), streaming = cost(true, bytes);
  return cached > 0 && streaming > 0 && streaming < cached;
}

void StoreChooser::report(bool streaming, double seconds, int64_t bytes) {
  if (mode_ != SlotStores::kAuto || bytes <= 0 || seconds <= 0) return;
  SizeClass& c = classes_[size_class(bytes)];
  const int way = streaming ? 1 : 0;
  c.recent[way][c.next[way]] = seconds / static_cast<double>(bytes);
  c.next[way] = (c.next[way] + 1) % kWindow;
}

double StoreChooser::cost(bool streaming, int64_t bytes) const {
  auto it = classes_.find(size_class(bytes));
  return it == classes_.end() ? 0 : least(it->second.recent[streaming ? 1 : 0]);
}

}  // namespace korovod::shm
