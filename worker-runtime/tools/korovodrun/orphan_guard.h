// korovodrun killed outright (SIGKILL, the OOM killer) cannot end its ranks: a local rank's own
// process gets SIGTERM from the kernel (PR_SET_PDEATHSIG, child_process.cc), but not what it
// started, and an ssh rank's remote side ends only because ssh dies with it. The guard is a small
// process forked when korovodrun starts (before any thread); korovodrun tells it through a pipe
// which process groups are ranks. When that pipe closes without korovodrun having said it is
// done, korovodrun is gone: the guard sends SIGTERM to every group it knows, SIGKILL after the
// grace period, and exits. (horovodrun's safe_shell_exec runs a "middleman" per rank for this.)
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>

#include "korovod/status.h"
#include "os/fd.h"

namespace korovod::launcher {

// What the supervisor reports about the ranks' process groups.
class GroupWatcher {
 public:
  virtual ~GroupWatcher() = default;
  virtual void watch(pid_t group) = 0;   // a rank started in this group
  virtual void forget(pid_t group) = 0;  // that rank ended and korovodrun killed its group
};

class OrphanGuard : public GroupWatcher {
 public:
  // Forks the guard. Call while this process has a single thread.
  static Result<std::unique_ptr<OrphanGuard>> start(std::chrono::milliseconds grace);
  ~OrphanGuard() override;  // tells the guard korovodrun is done, and reaps it
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  void watch(pid_t group) override;
  void forget(pid_t group) override;
  // Closes the pipe as korovodrun's death would, and waits for the guard to finish (tests).
  void abandon();

 private:
  OrphanGuard(os::Fd pipe, pid_t guard) : pipe_(std::move(pipe)), guard_(guard) {}
  void send(char op, pid_t group);
  void reap_guard();

  os::Fd pipe_;  // write end; the guard holds the read end
  pid_t guard_;
};

}  // namespace korovod::launcher
