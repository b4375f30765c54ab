// How the ranks write the data their peers will read out of the slots of a ring allreduce: plain
// (cached) stores, or streaming (non-temporal) stores that send the lines to memory. Which is
// faster depends on whether the ranks' cores share a cache, and on a VM that can change from one
// second to the next. So the chooser measures both, per message size (powers of two), keeps the
// faster and re-tries the other every few calls of that size. A way's cost is the least of its
// last two calls: timing noise only ever adds time, so one slow call does not move it, and a way
// that really got slower shows it after two, not more (bench/results/2026-11-22-shm-settings.md).
//
// Pure: the caller times its calls and reports them; nothing here reads a clock. Every rank of
// the set counts the calls of each size class the same way (all run the same collectives), but
// only rank 0 measures: it publishes which way it favours per size class, and the others take
// that instead of their own. So all ranks write the same way in a call (each rank's choice changes
// how fast the others read, so a call in which they wrote differently would say nothing about
// either way), without an extra wait: a follower reads what rank 0 last published, which lags by
// at most the call in which rank 0 changed its mind.
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

  // Streaming stores for the next call, of `bytes`? Rank 0: from its own measurements.
  bool streaming(int64_t bytes) { return streaming(bytes, favoured(bytes)); }
  // The same for a follower, with the way rank 0 favours for this size (published_favoured).
  // Per size class: the first kFirstCalls alternate plain, streaming, plain, streaming; then the
  // favoured way except every explore_every-th call.
  bool streaming(int64_t bytes, bool published_favoured);
  // That call took `seconds` (rank 0).
  void report(bool streaming, double seconds, int64_t bytes);
  // Does rank 0 currently favour streaming stores for `bytes`' size class?
  bool favoured(int64_t bytes) const;
  // Seconds per byte of `bytes`' size class: the least of the last kWindow calls (0: not yet).
  double cost(bool streaming, int64_t bytes) const;
  static constexpr int kWindow = 2;
  static constexpr int kFirstCalls = 6;
  // Size class of `bytes`: floor(log2(bytes)); < 64, so a class is one bit of a 64-bit word.
  static int size_class(int64_t bytes);

 private:
  struct SizeClass {
    int64_t calls = 0;
    // Seconds per byte of the last kWindow calls of each way ([1] = streaming), 0 = empty.
    std::array<std::array<double, kWindow>, 2> recent{};
    std::array<int, 2> next{};  // where the next measurement of each way goes
  };
  static double least(const std::array<double, kWindow>& recent);

  SlotStores mode_;
  int explore_every_;
  std::map<int, SizeClass> classes_;
};

}  // namespace korovod::shm
