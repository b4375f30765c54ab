// The mapped segments of every member of one process set and the synchronisation on their
// counters: release stores by the owner, acquire loads by the others, spin-then-yield waits
// (ranks may outnumber free cores, so a waiter must give its core to the rank it waits for),
// and failure detection while waiting (a peer's abort flag, or its process gone).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

#include "transport/shm/shm_segment.h"
#include "transport/shm/store_chooser.h"

namespace korovod::shm {

struct Geometry {
  // Measured 2026-11-22 against 64 and 128 KiB (docs/benchmarks.md): 256 KiB was as fast or
  // faster from 256 KiB messages up, in both of this VM's modes.
  size_t slot_bytes = 256 * 1024;
  int slots = 8;
  // A wait on a live peer longer than this fails the set (0 = never): the same bound as the
  // engine's watchdog (KOROVOD_COLLECTIVE_TIMEOUT_SECONDS), enforced where the waiting happens,
  // so a thread blocked here returns even when the peer is alive but stuck.
  double wait_timeout_seconds = 0;
  // Allreduces of at least this many bytes write their output with streaming stores (0 = never):
  // no read-for-ownership of output lines that do not fit in a core's L2 anyway. Measured
  // 2026-11-22 with the reader of the output included in the time (korovod-bench --read-output):
  // as fast or faster from 1 MiB up; see docs/benchmarks.md.
  size_t streaming_bytes = 1u << 20;
  // How ring allreduces of at least StoreChooser's size write the slots peers read.
  SlotStores slot_stores = SlotStores::kAuto;
  size_t segment_bytes() const { return kControlBytes + slot_bytes * static_cast<size_t>(slots); }
};

class Group {
 public:
  Group(int rank, std::vector<Segment> segments, std::vector<pid_t> pids, Geometry geometry);

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(segments_.size()); }
  const Geometry& geometry() const { return geometry_; }

  // Slot of `rank` used by round `round` (a ring: round % slots).
  std::byte* slot(int rank, uint64_t round) const {
    return segments_[rank].slots() + (round % static_cast<uint64_t>(geometry_.slots)) * geometry_.slot_bytes;
  }
  std::byte* control_area(int rank) const { return segments_[rank].control_area(); }
  void post(Counter c, uint64_t value) { segments_[rank_].counter(c).store(value, std::memory_order_release); }
  // A peer's word, after a wait on that peer has ordered its earlier stores before this load.
  uint64_t peer_word(int rank, Counter c) const { return segments_[rank].counter(c).load(std::memory_order_acquire); }
  // Until `rank`'s counter reaches `target`; an error when a peer aborted or died meanwhile.
  Status wait(int rank, Counter c, uint64_t target);
  Status wait_all(Counter c, uint64_t target);  // every other member
  // Before this rank writes its slot for `round`: every peer has finished reading the round
  // that used the slot last.
  Status acquire_slot(uint64_t round);
  // Marks this rank failed, so that peers waiting on it stop with an error instead of hanging.
  void abort_all() { post(Counter::kAborted, 1); }
  bool failed() const { return failed_; }

 private:
  Status check_peers(int waited_for, Counter c, uint64_t target);

  int rank_;
  std::vector<Segment> segments_;
  std::vector<pid_t> pids_;
  Geometry geometry_;
  bool failed_ = false;
  std::chrono::steady_clock::time_point next_liveness_check_{};
};

}  // namespace korovod::shm
