#include "local/process/reaper.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "kube/clock_sleep.h"
#include "os/children.h"

namespace local {

int reap_all_children(std::chrono::milliseconds limit, kube::Clock& clock) {
  const auto deadline = clock.steady_now() + limit;
  int reaped = 0;
  for (;;) {
    for (pid_t child : korovod::os::children_of(getpid())) kill(child, SIGKILL);
    int status = 0;
    pid_t r;
    while ((r = waitpid(-1, &status, WNOHANG)) > 0) ++reaped;
    if (r < 0 && errno == ECHILD) return reaped;  // nothing left, not even a zombie
    if (clock.steady_now() >= deadline) return reaped;
    kube::sleep_for(clock, std::chrono::milliseconds(10));
  }
}

}  // namespace local
