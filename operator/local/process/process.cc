#include "local/process/process.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>
#include <string_view>

#include "os/line_splitter.h"

namespace local {

namespace os = korovod::os;

os::ExecArrays exec_arrays(const Exec& exec) {
  if (exec.argv.empty()) throw std::invalid_argument("empty command");
  korovod::Result<os::ExecArrays> arrays = os::ExecArrays::resolve(exec.argv, exec.env);
  if (!arrays.is_ok()) throw std::runtime_error("executable file not found in $PATH: " + exec.argv[0]);
  return std::move(arrays).value();
}

Process::Process(const Exec& exec, LineSink sink) : sink_(std::move(sink)) {
  const os::ExecArrays args = exec_arrays(exec);
  os::SpawnOptions options;
  options.merge_output = true;
  korovod::Result<os::Child> child = os::spawn(args, options);
  if (!child.is_ok()) throw std::runtime_error(child.status().message());
  pid_ = child->pid;
  out_ = std::move(child->out);
  pump_thread_ = std::thread([this] { pump(); });
}

Process::~Process() {
  if (!exit_code_) {
    kube::RealClock clock;
    stop_process(*this, std::chrono::milliseconds(2000), clock);
  }
  stop_pump_ = true;
  if (pump_thread_.joinable()) pump_thread_.join();
}

void Process::pump() {
  os::LineSplitter lines;  // bounded lines, as korovodrun reads a rank's output
  const auto emit = [this](std::string_view text, std::string_view) { sink_(std::string(text)); };
  char buf[4096];
  // Ends at EOF, or once asked to stop after the process ended (a leftover child may hold the
  // pipe open).
  while (true) {
    pollfd p{out_.get(), POLLIN, 0};
    int r = ::poll(&p, 1, 200);
    if (r == 0) {
      if (stop_pump_) break;
      continue;
    }
    ssize_t n = read(out_.get(), buf, sizeof buf);
    if (n <= 0) break;
    lines.feed(std::string_view(buf, size_t(n)), emit);
  }
  lines.finish(emit);
}

// Once the process ended, anything it left in its group goes with it, as with a container's init
// (os::reap_group_if_ended, os::wait_group).
std::optional<int> Process::poll() {
  if (!exit_code_) exit_code_ = os::reap_group_if_ended(pid_);
  return exit_code_;
}

void Process::signal(int signo) {
  if (!exit_code_) kill(-pid_, signo);
}

int Process::wait() {
  if (!exit_code_) exit_code_ = os::wait_group(pid_);
  return *exit_code_;
}

}  // namespace local
