// How the ranks write the data their peers will read out of the slots of a ring allreduce: plain
// (cached) stores, or streaming (non-temporal) stores that send the lines to memory. Which is
// faster depends on where the ranks run, and on a VM that can change from one second to the
// next. Measured on this project's 2-vCPU VM (docs/benchmarks.md): when the two vCPUs share a
// cache, the peer's reads hit it and plain stores win by ~30 %; when they do not, every line
// crosses between caches and streaming stores win by 2-2.5x (the peer then reads from memory).
// So the chooser measures both, per message size (powers of two), keeps the faster and re-tries
// the other every few calls of that size.
//
// Pure: the caller times its calls and reports them; nothing here reads a clock. One rank of the
// set (rank 0) keeps the chooser and publishes each decision to the others, so that all ranks
// write the same way in a call: each rank's choice changes how fast the others read, so a call in
// which the ranks wrote differently would say nothing about either way.
#pragma once

#include <array>
#include <cstdint>
#include <map>

namespace korovod::shm {

enum class SlotStores { kAuto, kCached, kStreaming };

class StoreChooser {
 public:
  // explore_every: every this many calls of a size, the way not in favour is used once, so its
  // cost follows the machine.
  explicit StoreChooser(SlotStores mode = SlotStores::kAuto, int explore_every = 16)
      : mode_(mode), explore_every_(explore_every) {}

  // Streaming stores for the next call, of `bytes`?
  bool streaming(int64_t bytes);
  // That call took `seconds`.
  void report(bool streaming, double seconds, int64_t bytes);
  // Seconds per byte as last measured for calls of `bytes`' size class (0: not yet).
  double cost(bool streaming, int64_t bytes) const;

 private:
  struct SizeClass {
    int64_t calls = 0;
    std::array<double, 2> cost{};  // seconds per byte, smoothed; [1] = streaming
  };
  static int size_class(int64_t bytes);  // floor(log2(bytes))

  SlotStores mode_;
  int explore_every_;
  std::map<int, SizeClass> classes_;
};

}  // namespace korovod::shm
