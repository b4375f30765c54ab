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

namespace {

os::Child start_child(const Exec& exec) {
  const os::ExecArrays args = exec_arrays(exec);
  os::SpawnOptions options;
  options.merge_output = true;
  korovod::Result<os::Child> child = os::spawn(args, options);
  if (!child.is_ok()) throw std::runtime_error(child.status().message());
  return std::move(child).value();
}

}  // namespace

Process::Process(const Exec& exec, LineSink sink)
    : group_(start_child(exec)), out_(std::move(group_.out())), sink_(std::move(sink)) {
  pump_thread_ = std::thread([this] { pump(); });
}

Process::~Process() {
  if (group_.running()) {
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
// (os::ProcessGroup).
std::optional<int> Process::poll() { return group_.poll(); }

void Process::signal(int signo) { group_.signal(signo); }

int Process::wait() { return group_.wait(); }

}  // namespace local
