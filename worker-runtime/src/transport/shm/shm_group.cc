#include "transport/shm/shm_group.h"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace korovod::shm {
namespace {

// Spin this many times before yielding: long enough to catch a peer that is running on another
// core (a round is a few microseconds), short enough not to burn the time slice of a peer that
// shares our core.
constexpr int kSpins = 256;
// How often a waiter looks at /proc for a dead peer: bounds the error latency after a crash.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A killed process is first a zombie (kill(pid, 0) still succeeds) until its parent reaps it.
bool process_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ||
         (line[paren + 2] != 'Z' && line[paren + 2] != 'X');
}

}  // namespace

Group::Group(int rank, std::vector<Segment> segments, std::vector<pid_t> pids, Geometry geometry)
    : rank_(rank), segments_(std::move(segments)), pids_(std::move(pids)), geometry_(geometry) {}

Status Group::check_peers(int waited_for, Counter c, uint64_t target) {
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && segments_[r].counter(Counter::kAborted).load(std::memory_order_acquire) != 0) {
      failed_ = true;
      abort_all();
      return Status::aborted(fmt::format(
          "shared-memory collective: rank {} of the process set failed (waiting for rank {})", r, waited_for));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < next_liveness_check_) return Status::ok();
  next_liveness_check_ = now + kLivenessPeriod;
  // Only the rank we wait for: a peer that already has everything it needs may legitimately be
  // gone. A dead rank further along the chain is reported by whoever waits for it, through
  // that rank's abort flag above.
  // Re-read the counter after the liveness check: the peer may have posted and then exited
  // (legitimately) between our last load and now; its segment stays mapped, so the data is good.
  if (!process_alive(pids_[waited_for]) && segments_[waited_for].counter(c).load(std::memory_order_acquire) < target) {
    failed_ = true;
    abort_all();
    return Status::aborted(fmt::format("shared-memory collective: rank {} of the process set (pid {}) has died",
                                       waited_for, pids_[waited_for]));
  }
  return Status::ok();
}

Status Group::wait(int rank, Counter c, uint64_t target) {
  if (failed_) return Status::aborted("shared-memory collective: the process set failed earlier");
  std::atomic_ref<uint64_t> word = segments_[rank].counter(c);
  std::chrono::steady_clock::time_point give_up{};
  for (int i = 0; word.load(std::memory_order_acquire) < target; ++i) {
    if (i < kSpins) {
      cpu_relax();
      continue;
    }
    sched_yield();
    if ((i & 15) == 0) {
      Status st = check_peers(rank, c, target);
      if (!st.is_ok()) return st;
      if (geometry_.wait_timeout_seconds > 0) {
        const auto now = std::chrono::steady_clock::now();
        if (give_up == std::chrono::steady_clock::time_point{}) {
          give_up = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(geometry_.wait_timeout_seconds));
        } else if (now >= give_up && word.load(std::memory_order_acquire) < target) {
          failed_ = true;
          abort_all();
          return Status::aborted(fmt::format(
              "shared-memory collective: rank {} of the process set did not arrive within {} s "
              "(KOROVOD_COLLECTIVE_TIMEOUT_SECONDS)", rank, geometry_.wait_timeout_seconds));
        }
      }
    }
  }
  return Status::ok();
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
