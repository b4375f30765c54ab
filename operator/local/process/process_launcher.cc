#include "local/process/process_launcher.h"

#include "kube/clock_sleep.h"

#include <signal.h>

#include <algorithm>
#include <mutex>

namespace local {

int stop_process(LaunchedProcess& process, std::chrono::milliseconds grace, kube::Clock& clock) {
  if (auto code = process.poll()) return *code;
  process.signal(SIGTERM);
  const auto deadline = clock.steady_now() + grace;
  while (clock.steady_now() < deadline) {
    if (auto code = process.poll()) return *code;
    kube::sleep_until(clock, std::min(deadline, clock.steady_now() + std::chrono::milliseconds(20)));
  }
  if (auto code = process.poll()) return *code;
  process.signal(SIGKILL);
  return process.wait();
}

RunResult run_to_end(ProcessLauncher& launcher, const Exec& exec) {
  RunResult result;
  kube::Mutex mu;  // the output callback may run on the launcher's reader thread
  {
    auto process = launcher.start(exec, [&](const std::string& line) {
      kube::MutexLock lock(mu);
      result.output.push_back(line);
    });
    result.exit_code = process->wait();
  }  // the process object is gone: its output has all come
  return result;
}

}  // namespace local
