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

// One pass of "no process left behind" for a subreaper about to exit: SIGKILLs every child this
// process still has and reaps those that have ended, without blocking. The caller repeats it on
// its own clock until none_left (operator/local/process/reaper.h). Only once nothing else waits
// on a child of its own: waitpid(-1) takes any child's exit status.
struct ReapPass {
  int reaped = 0;
  bool none_left = false;  // no child at all, not even a zombie
};
ReapPass kill_and_reap_children();

}  // namespace korovod::os
