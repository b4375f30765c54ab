#include "os/children.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace korovod::os {

bool become_subreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

// /proc/<pid>/stat: field 4 is the parent pid; field 2, the command, is in parentheses and may
// contain spaces, so the line is read from its last ')'.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // ended meanwhile
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) continue;
    // After ") " come the state (one char), a space, then the parent pid.
    const auto ppid = static_cast<pid_t>(std::atol(line.c_str() + close + 4));
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

ReapPass kill_and_reap_children() {
  ReapPass pass;
  for (pid_t child : children_of(getpid())) kill(child, SIGKILL);
  int status = 0;
  pid_t r;
  while ((r = waitpid(-1, &status, WNOHANG)) > 0) ++pass.reaped;
  pass.none_left = r < 0 && errno == ECHILD;
  return pass;
}

}  // namespace korovod::os
