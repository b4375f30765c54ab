// One rank's shared segment: a control block of counters (one per cache line) followed by a ring
// of chunk slots. Created once per process set and pre-faulted, so a collective never allocates
// or takes a page fault. The name is unlinked as soon as every rank has mapped it: after that
// nothing is left in /dev/shm even if the job is killed with SIGKILL.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "korovod/status.h"

namespace korovod::shm {

// Counters hold absolute round numbers ("round k done" is k + 1), so they only grow, need no
// reset between collectives, and an algorithm that skips one in a round leaves no stale state.
// kControl counts the negotiation's bit-vector rounds (ShmBackend::allreduce_bits), which run
// between collectives and so have their own round numbers. kStores is not a counter: rank 0
// publishes there, one bit per size class, where it favours streaming slot stores (StoreChooser).
// kIdleBell is the owner's doorbell: peers (and the owner's own threads) add to it to wake the
// owner's idle engine (Group::ring / sleep).
enum class Counter : int {
  kPosted = 0, kReduced = 1, kConsumed = 2, kAborted = 3, kControl = 4, kStores = 5, kIdleBell = 6
};
inline constexpr int kCounters = 7;
inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kControlBytes = 4096;  // slots start page-aligned
// Inside the control block, after the counters: two buffers (even and odd control rounds) for
// the negotiation's bit vectors.
inline constexpr size_t kControlAreaOffset = 1024;
inline constexpr size_t kControlAreaBytes = kControlBytes - kControlAreaOffset;
static_assert(kCounters * kCacheLine <= kControlAreaOffset);

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates (O_EXCL), sizes, maps and pre-faults a new segment under `name`.
  static Result<Segment> create(const std::string& name, size_t bytes);
  // Maps a peer's segment (MAP_POPULATE: faulted in now, not during a collective).
  static Result<Segment> open(const std::string& name, size_t bytes);
  // Removes the name; the mapping stays valid until unmapped.
  void unlink();

  std::atomic_ref<uint64_t> counter(Counter c) const {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(base_ + static_cast<int>(c) * kCacheLine));
  }
  // The counter's low 32 bits as a futex word (x86-64 is little-endian), for sleeping on it.
  uint32_t* futex_word(Counter c) const { return reinterpret_cast<uint32_t*>(base_ + static_cast<int>(c) * kCacheLine); }
  // How many threads (of any member) sleep on the counter's futex word: a post wakes them only
  // when there are some, so a round between running ranks costs no system call.
  std::atomic_ref<uint32_t> sleepers(Counter c) const {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_ + static_cast<int>(c) * kCacheLine + 8));
  }
  std::byte* slots() const { return base_ + kControlBytes; }
  std::byte* control_area() const { return base_ + kControlAreaOffset; }
  const std::string& name() const { return name_; }

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool linked_ = false;  // this process created the name and has not unlinked it yet
};

}  // namespace korovod::shm
