#include "transport/shm/shm_group.h"

#include <fmt/format.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <fstream>
#include <string>

namespace korovod::shm {
namespace {

static_assert(std::endian::native == std::endian::little, "futex words are the counters' low halves");

// Spin this many times before yielding: long enough to catch a peer that is running on another
// core (a round is a few microseconds), short enough not to burn the time slice of a peer that
// shares our core.
constexpr int kSpins = 256;
// Then yield for this long before sleeping: a peer that lost its core for a moment gets it back
// without a futex round trip; a peer that is busy elsewhere (computing, or waiting itself) is
// waited for asleep, at no CPU cost.
constexpr auto kYieldFor = std::chrono::microseconds(50);
// How often a waiter looks for a dead peer (Env::process_alive): bounds the error latency after a crash. A
// sleeping waiter wakes this often for it (a dead peer posts nothing).
constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

// Shared (not process-private) futexes: the words live in segments mapped by several processes.
void futex_wait(uint32_t* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return;
  timespec ts{static_cast<time_t>(timeout.count() / 1000000000), static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(uint32_t* word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

Group::Group(int rank, std::vector<Segment> segments, std::vector<pid_t> pids, Geometry geometry,
             std::vector<std::string> names, std::shared_ptr<const Env> env)
    : rank_(rank),
      segments_(std::move(segments)),
      pids_(std::move(pids)),
      geometry_(geometry),
      names_(std::move(names)),
      env_(env ? std::move(env) : std::make_shared<SystemEnv>()) {
  pidfds_.assign(pids_.size(), -1);
  for (size_t r = 0; r < pids_.size(); ++r) {
    if (static_cast<int>(r) != rank_) pidfds_[r] = static_cast<int>(syscall(SYS_pidfd_open, pids_[r], 0));
  }
}

Group::~Group() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
}

bool Group::peer_exited() const {
  std::vector<pollfd> fds;
  for (size_t r = 0; r < pidfds_.size(); ++r) {
    if (static_cast<int>(r) == rank_) continue;
    if (pidfds_[r] >= 0) {
      fds.push_back({pidfds_[r], POLLIN, 0});
    } else if (!env_->process_alive(pids_[r])) {
      return true;
    }
  }
  if (fds.empty() || poll(fds.data(), fds.size(), 0) <= 0) return false;
  for (const pollfd& p : fds) {
    if (p.revents != 0) return true;
  }
  return false;
}

std::string Group::name(int r) const {
  if (r >= 0 && r < static_cast<int>(names_.size())) return names_[r];
  return fmt::format("rank {} of the process set", r);
}

// The abort flag: 0 running, 1 failed, 2 + r failed because set rank r was lost.
Status Group::check_peers(int waited_for, Counter c, uint64_t target) {
  for (int r = 0; r < size(); ++r) {
    const uint64_t flag = r == rank_ ? 0 : segments_[r].counter(Counter::kAborted).load(std::memory_order_acquire);
    if (flag == 0) continue;
    failed_ = true;
    const int lost = flag >= 2 && flag - 2 < static_cast<uint64_t>(size()) ? static_cast<int>(flag - 2) : -1;
    abort_all(lost);
    if (lost == rank_) {
      return Status::aborted(fmt::format(
          "shared-memory collective: {} failed waiting for this rank ({}), which stayed away past the wait bound",
          name(r), name(rank_)));
    }
    if (lost >= 0) {
      return Status::aborted(fmt::format(
          "shared-memory collective: lost {} (pid {}): {} failed waiting for it (this rank was waiting for {})",
          name(lost), pids_[lost], name(r), name(waited_for)));
    }
    return Status::aborted(fmt::format("shared-memory collective: {} failed (waiting for {})", name(r),
                                       name(waited_for)));
  }
  const auto now = env_->now();
  if (now < next_liveness_check_) return Status::ok();
  next_liveness_check_ = now + kLivenessPeriod;
  // Only the rank we wait for: a peer that already has everything it needs may legitimately be
  // gone. A dead rank further along the chain is reported by whoever waits for it, through
  // that rank's abort flag above.
  // Re-read the counter after the liveness check: the peer may have posted and then exited
  // (legitimately) between our last load and now; its segment stays mapped, so the data is good.
  if (!env_->process_alive(pids_[waited_for]) && segments_[waited_for].counter(c).load(std::memory_order_acquire) < target) {
    failed_ = true;
    abort_all(waited_for);
    return Status::aborted(fmt::format("shared-memory collective: lost {} (pid {}): the process has died",
                                       name(waited_for), pids_[waited_for]));
  }
  return Status::ok();
}

void Group::post(Counter c, uint64_t value) {
  const Segment& mine = segments_[rank_];
  // seq_cst: a waiter first counts itself among the sleepers, then re-reads the counter; so
  // either it sees this value, or this load sees it and wakes it.
  mine.counter(c).store(value, std::memory_order_seq_cst);
  if (mine.sleepers(c).load(std::memory_order_seq_cst) != 0) futex_wake_all(mine.futex_word(c));
}

void Group::abort_all(int lost) {
  post(Counter::kAborted, lost >= 0 ? static_cast<uint64_t>(lost) + 2 : 1);
  // Peers asleep on any of this rank's counters see the flag now rather than at their next
  // liveness check.
  for (int c = 0; c < kCounters; ++c) futex_wake_all(segments_[rank_].futex_word(static_cast<Counter>(c)));
}

Status Group::wait(int rank, Counter c, uint64_t target) {
  if (failed_) return Status::aborted("shared-memory collective: the process set failed earlier");
  const Segment& peer = segments_[rank];
  std::atomic_ref<uint64_t> word = peer.counter(c);
  for (int i = 0; i < kSpins; ++i) {
    if (word.load(std::memory_order_acquire) >= target) return Status::ok();
    cpu_relax();
  }
  using Steady = std::chrono::steady_clock;
  waiting_for_.store(rank, std::memory_order_seq_cst);
  struct NotWaiting {
    std::atomic<int>& w;
    ~NotWaiting() { w.store(-1, std::memory_order_seq_cst); }
  } not_waiting{waiting_for_};
  const Steady::time_point slow_since = env_->now();
  Steady::time_point give_up = Steady::time_point::max();
  if (geometry_.wait_timeout_seconds > 0) {
    give_up = slow_since + std::chrono::duration_cast<Steady::duration>(
                               std::chrono::duration<double>(geometry_.wait_timeout_seconds));
  }
  for (int i = 0;; ++i) {
    uint64_t seen = word.load(std::memory_order_acquire);
    if (seen >= target) return Status::ok();
    Steady::time_point now{};
    if ((i & 15) == 0) {
      KOROVOD_RETURN_IF_ERROR(check_peers(rank, c, target));
      if (interrupted_.load(std::memory_order_acquire) && word.load(std::memory_order_acquire) < target) {
        failed_ = true;
        abort_all(rank);
        return Status::aborted(fmt::format(
            "{}: shared-memory collective: lost {} (pid {}): it did not arrive (alive but "
            "stopped or stuck)", why_, name(rank), pids_[rank]));
      }
      now = env_->now();
      if (now >= give_up && word.load(std::memory_order_acquire) < target) {
        failed_ = true;
        abort_all(rank);
        return Status::aborted(fmt::format(
            "shared-memory collective: lost {} (pid {}): it did not arrive within {} s "
            "(KOROVOD_COLLECTIVE_TIMEOUT_SECONDS; alive but stopped or stuck)",
            name(rank), pids_[rank], geometry_.wait_timeout_seconds));
      }
    }
    if (now == Steady::time_point{} || now - slow_since < kYieldFor) {
      sched_yield();
      continue;
    }
    peer.sleepers(c).fetch_add(1, std::memory_order_seq_cst);
    seen = word.load(std::memory_order_seq_cst);
    if (seen < target) {
      const auto until = std::min(now + kLivenessPeriod, give_up);
      futex_wait(peer.futex_word(c), static_cast<uint32_t>(seen), until - now);
    }
    peer.sleepers(c).fetch_sub(1, std::memory_order_seq_cst);
    i = -1;  // checks (abort, liveness, time) after every sleep
  }
}

bool Group::interrupt(const std::string& why) {
  bool first = false;
  if (interrupt_claimed_.compare_exchange_strong(first, true)) {
    why_ = why;
    interrupted_.store(true, std::memory_order_release);
  }
  // The waiter may be asleep on any peer's futex: wake them all (other ranks asleep on the same
  // words re-check their counters and sleep again).
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    for (int c = 0; c < kCounters; ++c) futex_wake_all(segments_[r].futex_word(static_cast<Counter>(c)));
  }
  return waiting_for_.load(std::memory_order_seq_cst) >= 0 ||
         segments_[rank_].counter(Counter::kAborted).load(std::memory_order_acquire) != 0;
}

Status Group::wait_all(Counter c, uint64_t target) {
  // A peer that gave up on this rank (it stayed away past the wait bound) may have posted this
  // round before it did: its counter alone would let a late rank through on stale state.
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && segments_[r].counter(Counter::kAborted).load(std::memory_order_relaxed) != 0) {
      return check_peers(r, c, target);
    }
  }
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    Status st = wait(r, c, target);
    if (!st.is_ok()) return st;
  }
  return Status::ok();
}

Status Group::acquire_slot(uint64_t round) {
  const uint64_t slots = static_cast<uint64_t>(geometry_.slots);
  if (round < slots) return Status::ok();
  return wait_all(Counter::kConsumed, round - slots + 1);
}

}  // namespace korovod::shm

namespace korovod::shm {

void Group::ring(int rank) {
  const Segment& s = segments_[rank];
  s.counter(Counter::kIdleBell).fetch_add(1, std::memory_order_seq_cst);
  if (s.sleepers(Counter::kIdleBell).load(std::memory_order_seq_cst) != 0) {
    futex_wake_all(s.futex_word(Counter::kIdleBell));
  }
}

void Group::ring_own() { ring(rank_); }

void Group::ring_sleeping_peers() {
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && segments_[r].sleepers(Counter::kIdleBell).load(std::memory_order_seq_cst) != 0) ring(r);
  }
}

bool Group::control_round_pending() const {
  if (peer_gone_.load(std::memory_order_relaxed)) return true;  // a round finds out which, and fails
  const uint64_t mine = segments_[rank_].counter(Counter::kControl).load(std::memory_order_seq_cst);
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && segments_[r].counter(Counter::kControl).load(std::memory_order_seq_cst) > mine) return true;
  }
  return false;
}

void Group::sleep_idle(uint64_t seen, double timeout_seconds) {
  using Steady = std::chrono::steady_clock;
  const Segment& mine = segments_[rank_];
  const Steady::time_point until =
      env_->now() + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(timeout_seconds));
  // Counted among the sleepers first, then the checks: a peer that posts a control round after
  // them sees the count and rings; one that posted before is seen by control_round_pending.
  mine.sleepers(Counter::kIdleBell).fetch_add(1, std::memory_order_seq_cst);
  // In slices, each followed by a look at the peers' processes: a peer that dies posts nothing,
  // and a rank waiting for it here (for its part of an operation already submitted) would
  // otherwise learn of it only at its next stall check, up to a second later.
  for (;;) {
    if (bell() != seen || control_round_pending()) break;
    const Steady::time_point now = env_->now();
    if (now >= until) break;
    futex_wait(mine.futex_word(Counter::kIdleBell), static_cast<uint32_t>(seen),
               std::min<Steady::duration>(until - now, kIdleLivenessPeriod));
    if (bell() == seen && peer_exited()) {
      peer_gone_.store(true, std::memory_order_relaxed);
      break;
    }
  }
  mine.sleepers(Counter::kIdleBell).fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace korovod::shm
