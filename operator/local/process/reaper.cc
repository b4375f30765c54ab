#include "local/process/reaper.h"

#include "kube/clock_sleep.h"
#include "os/children.h"

namespace local {

int reap_all_children(std::chrono::milliseconds limit, kube::Clock& clock) {
  const auto deadline = clock.steady_now() + limit;
  int reaped = 0;
  for (;;) {
    const korovod::os::ReapPass pass = korovod::os::kill_and_reap_children();
    reaped += pass.reaped;
    if (pass.none_left) return reaped;
    if (clock.steady_now() >= deadline) return reaped;
    kube::sleep_for(clock, std::chrono::milliseconds(10));
  }
}

}  // namespace local
