#include "local/process/reaper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "local/process/clock_sleep.h"

namespace local {
namespace {

// Children of `parent`, read from /proc/<pid>/stat (field 4 is the parent pid; field 2, the
// command, is in parentheses and may contain spaces, so parse from the last ')').
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) continue;
    // After ") " come the state (one char), a space, then the parent pid.
    const pid_t ppid = static_cast<pid_t>(std::atol(line.c_str() + close + 4));
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

bool become_subreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

int reap_all_children(std::chrono::milliseconds limit, kube::Clock& clock) {
  const auto deadline = clock.steady_now() + limit;
  int reaped = 0;
  for (;;) {
    for (pid_t child : children_of(getpid())) kill(child, SIGKILL);
    int status = 0;
    pid_t r;
    while ((r = waitpid(-1, &status, WNOHANG)) > 0) ++reaped;
    if (r < 0 && errno == ECHILD) return reaped;  // nothing left, not even a zombie
    if (clock.steady_now() >= deadline) return reaped;
    sleep_for(clock, std::chrono::milliseconds(10));
  }
}

}  // namespace local
