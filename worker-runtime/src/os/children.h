// A process that starts others can make itself their "child subreaper": what they leave behind
// when they die (bubblewrap's inner process, a rank's own children) is re-parented to it rather
// than to init, so that it can still kill and reap all of it (operator/local/process/reaper.h).
#pragma once

#include <sys/types.h>

#include <vector>

namespace korovod::os {

// Marks this process as a child subreaper (Linux prctl). False if the kernel refuses.
bool become_subreaper();

// The processes whose parent is `parent` now, read from /proc.
std::vector<pid_t> children_of(pid_t parent);

}  // namespace korovod::os
