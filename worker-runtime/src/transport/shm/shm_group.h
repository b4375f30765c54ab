// The mapped segments of every member of one process set and the synchronisation on their
// counters: stores by the owner, acquire loads by the others, and waits that spin briefly, then
// yield briefly (ranks may outnumber free cores, so a waiter must give its core to the rank it
// waits for), then sleep on the counter's futex until the owner's post wakes them (a rank that
// waits for a peer still computing must not take CPU from anyone meanwhile); failure detection
// while waiting (a peer's abort flag, or its process gone). Also each member's idle doorbell,
// whose sleep also notices a peer's process gone (then it asks for a round, whose wait on that
// peer reports it): an idle rank learns of a lost peer within kIdleLivenessPeriod.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "korovod/env.h"
#include "transport/shm/shm_segment.h"
#include "transport/shm/store_chooser.h"

namespace korovod::shm {

struct Geometry {
  // The fastest of 64, 128 and 256 KiB in bench/results/2026-11-22-shm-settings.md.
  size_t slot_bytes = 256 * 1024;
  int slots = 8;
  // A wait on a live peer longer than this fails the set (0 = never): the same bound as the
  // engine's watchdog (KOROVOD_COLLECTIVE_TIMEOUT_SECONDS), enforced where the waiting happens,
  // so a thread blocked here returns even when the peer is alive but stuck.
  double wait_timeout_seconds = 0;
  // Allreduces of at least this many bytes write their output with streaming stores (0 = never):
  // no read-for-ownership of output lines that do not fit in a core's L2 anyway (1 MiB: see
  // bench/results/2026-11-22-shm-settings.md).
  size_t streaming_bytes = 1u << 20;
  // How ring allreduces of at least StoreChooser's size write the slots peers read.
  SlotStores slot_stores = SlotStores::kAuto;
  size_t segment_bytes() const { return kControlBytes + slot_bytes * static_cast<size_t>(slots); }
};

class Group {
 public:
  // names[r]: what errors call set rank r ("rank 5 on host a"); empty = "rank r of the process set".
  // `env` (null = the system's) times the wait bound, the liveness looks and the idle sleep, and
  // says whether a peer's process is still alive (the liveness look):
  // the runtime's Env. The futex sleeps themselves are real, in slices of at most 100 ms, each
  // followed by a look at the clock.
  Group(int rank, std::vector<Segment> segments, std::vector<pid_t> pids, Geometry geometry,
        std::vector<std::string> names = {}, std::shared_ptr<const Env> env = nullptr);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(segments_.size()); }
  const Geometry& geometry() const { return geometry_; }

  // Slot of `rank` used by round `round` (a ring: round % slots).
  std::byte* slot(int rank, uint64_t round) const {
    return segments_[rank].slots() + (round % static_cast<uint64_t>(geometry_.slots)) * geometry_.slot_bytes;
  }
  std::byte* control_area(int rank) const { return segments_[rank].control_area(); }
  // Publishes `value`, then wakes whoever sleeps on it (a system call only when someone does).
  void post(Counter c, uint64_t value);
  // A peer's word, after a wait on that peer has ordered its earlier stores before this load.
  uint64_t peer_word(int rank, Counter c) const { return segments_[rank].counter(c).load(std::memory_order_acquire); }
  // Until `rank`'s counter reaches `target`; an error when a peer aborted or died meanwhile.
  Status wait(int rank, Counter c, uint64_t target);
  Status wait_all(Counter c, uint64_t target);  // every other member
  // Before this rank writes its slot for `round`: every peer has finished reading the round
  // that used the slot last.
  Status acquire_slot(uint64_t round);
  // Marks this rank failed, so that peers waiting on it stop with an error instead of hanging;
  // `lost` (a set rank, -1 = none) is the peer this rank lost, which the flag passes on so that
  // every member's error names it.
  void abort_all(int lost = -1);
  bool failed() const { return failed_; }
  // The engine's watchdog (any thread, while another waits here): the wait in progress, and
  // every later one that has to wait, fails at once with an error that starts with `why` and
  // names the peer it waited for (its abort flag passes that rank on, as for the wait bound).
  // True when a wait was in progress, or when this rank's group has failed already (that error,
  // which names the lost peer, is on its way up to the engine: a rank stopped for a moment as
  // its peers failed resumes with both its wait and its watchdog due). The wait bound alone
  // starts a little after the cycle the watchdog times, so without this the watchdog's own
  // error, which names no rank, came first.
  bool interrupt(const std::string& why);

  // The idle doorbell. An idle engine takes bell(), checks its own work, then sleep_idle(): it
  // returns when the bell moved since (ring_own from another thread, or a peer's
  // ring_sleeping_peers after it started a control round), when a peer has started a control
  // round this rank has not joined (control_round_pending), when a peer's process is gone
  // (looked at every kIdleLivenessPeriod of the sleep: one poll() of the peers' pidfds; from then
  // on control_round_pending() is true, so the engine starts a round and its wait on the dead
  // peer fails naming it), or after the timeout.
  uint64_t bell() const { return segments_[rank_].counter(Counter::kIdleBell).load(std::memory_order_seq_cst); }
  void sleep_idle(uint64_t seen, double timeout_seconds);
  void ring_own();             // any thread of this rank
  void ring_sleeping_peers();  // after posting a control round
  bool control_round_pending() const;
  static constexpr auto kIdleLivenessPeriod = std::chrono::milliseconds(100);

 private:
  bool peer_exited() const;  // any thread
  Status check_peers(int waited_for, Counter c, uint64_t target);
  std::string name(int r) const;
  void ring(int rank);

  int rank_;
  std::vector<Segment> segments_;
  std::vector<pid_t> pids_;
  Geometry geometry_;
  std::vector<std::string> names_;
  std::shared_ptr<const Env> env_;
  bool failed_ = false;
  std::chrono::steady_clock::time_point next_liveness_check_{};
  // pidfd_open of each peer (-1: this rank, or none to be had: then /proc is read instead);
  // readable once that process has exited (a zombie too).
  std::vector<int> pidfds_;
  std::atomic<bool> peer_gone_{false};  // sleep_idle saw a peer's process gone
  // interrupt(): the first caller claims, writes why_, then publishes interrupted_ (release);
  // the waiting thread reads why_ only after seeing interrupted_ (acquire).
  std::atomic<bool> interrupt_claimed_{false};
  std::atomic<bool> interrupted_{false};
  std::string why_;
  std::atomic<int> waiting_for_{-1};  // the set rank wait() sleeps or yields on, -1 = none
};

}  // namespace korovod::shm
