#include "child_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace korovod::launcher {

Result<os::Child> spawn_process(const ProcessSpec& spec) {
  Result<os::ExecArrays> exec = os::ExecArrays::resolve(spec.argv, os::EnvPairs(spec.env.begin(), spec.env.end()));
  if (!exec.is_ok()) return exec.status();
  os::SpawnOptions options;
  options.stdin_pipe = spec.stdin_pipe;
  options.stdin_data = spec.stdin_data;
  // korovodrun killed outright (SIGKILL): the rank still ends.
  options.parent_death_signal = SIGTERM;
  options.who = "korovodrun";
  return os::spawn(*exec, options);
}

Result<std::string> capture_output(const ProcessSpec& spec, bool include_stderr) {
  Result<os::Child> child = spawn_process(spec);
  if (!child.is_ok()) return child.status();
  std::string text, err_text;
  char buf[4096];
  pollfd fds[2] = {{child->out.get(), POLLIN, 0}, {child->err.get(), POLLIN, 0}};
  for (int open_fds = 2; open_fds > 0;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      const ssize_t n = read(p.fd, buf, sizeof buf);
      if (n > 0) {
        (include_stderr || &p == &fds[0] ? text : err_text).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        p.fd = -1;  // poll() skips negative descriptors
        --open_fds;
      }
    }
  }
  const int code = os::wait_exit_code(child->pid);
  if (code != 0) return Status::unknown(fmt::format("{} exited with code {}: {}{}", spec.argv[0], code, text, err_text));
  return text;
}

}  // namespace korovod::launcher
