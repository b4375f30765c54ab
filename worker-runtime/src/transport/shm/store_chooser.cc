#include "transport/shm/store_chooser.h"

#include <bit>

namespace korovod::shm {
namespace {

// Weight of the newest measurement: a couple of calls after the machine changes, the estimate
// follows it.
constexpr double kNewWeight = 0.5;

}  // namespace

int StoreChooser::size_class(int64_t bytes) {
  return bytes <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<uint64_t>(bytes)) - 1);
}

bool StoreChooser::streaming(int64_t bytes) {
  if (mode_ != SlotStores::kAuto) return mode_ == SlotStores::kStreaming;
  SizeClass& c = classes_[size_class(bytes)];
  const int64_t call = c.calls++;
  if (c.cost[0] == 0) return false;  // measure each way once first
  if (c.cost[1] == 0) return true;
  const bool favoured = c.cost[1] < c.cost[0];
  return call % explore_every_ == explore_every_ - 1 ? !favoured : favoured;
}

void StoreChooser::report(bool streaming, double seconds, int64_t bytes) {
  if (mode_ != SlotStores::kAuto || bytes <= 0 || seconds <= 0) return;
  double& cost = classes_[size_class(bytes)].cost[streaming ? 1 : 0];
  const double now = seconds / static_cast<double>(bytes);
  cost = cost == 0 ? now : (1 - kNewWeight) * cost + kNewWeight * now;
}

double StoreChooser::cost(bool streaming, int64_t bytes) const {
  auto it = classes_.find(size_class(bytes));
  return it == classes_.end() ? 0 : it->second.cost[streaming ? 1 : 0];
}

}  // namespace korovod::shm
