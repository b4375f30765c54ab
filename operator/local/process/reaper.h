// Orphans of a pod (e.g. bubblewrap's inner process, left when the outer one dies) are
// re-parented to the nearest "child subreaper". korovod makes itself that subreaper
// (korovod::os::become_subreaper, os/children.h), so that before it exits it can kill and reap
// every descendant it ever started: "no process left behind" then holds even where the
// machine's init reaps orphans late or never.
#pragma once

#include <chrono>

#include "kube/clock.h"

namespace local {

// SIGKILLs every remaining child of this process and reaps them all (os::kill_and_reap_children,
// repeated every 10 ms on `clock`), waiting at most `limit`. Returns the number of children
// reaped. Call only once no Process object still waits on its own child (waitpid(-1) would take
// their exit statuses).
int reap_all_children(std::chrono::milliseconds limit, kube::Clock& clock);

}  // namespace local
