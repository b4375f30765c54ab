// korovodrun: horovodrun's static launcher for korovod jobs (see docs/korovodrun.md and
// `korovodrun --help`).
#include <fmt/format.h>
#include <unistd.h>

#include "check_build.h"
#include "child_process.h"
#include "cli.h"
#include "elastic_launch.h"
#include "job_signals.h"
#include "mpirun_command.h"
#include "orphan_guard.h"
#include "rank_env.h"
#include "tcp_launch.h"

namespace {

using namespace korovod::launcher;

int run_under_mpirun(const LaunchOptions& o, const korovod::EnvMap& caller_env) {
  korovod::Result<std::vector<HostSlots>> hosts = hosts_from_options(o);
  korovod::Status s = hosts.is_ok() ? assign_slots(*hosts, o.num_proc).status() : hosts.status();
  if (s.is_ok()) {
    const korovod::EnvMap env = merged(caller_env, tuning_env(o));
    const std::vector<std::string> argv = mpirun_command(o, *hosts, env, geteuid() == 0);
    if (o.verbose) {
      std::string line;
      for (const std::string& a : argv) line += (line.empty() ? "" : " ") + shell_quote(a);
      fmt::print(stderr, "korovodrun: {}\n", line);
    }
    s = exec_mpirun(argv, env);  // returns only on failure
  }
  fmt::print(stderr, "korovodrun: {}\n", s.message());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const ParsedCommandLine parsed = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.exit_code) return *parsed.exit_code;
  const LaunchOptions& o = parsed.options;
  const korovod::EnvMap caller_env = korovod::process_environment();
  if (o.check_build) {
    // Each framework check runs with the caller's environment; its output is not shown.
    const CommandProbe probe = [&caller_env](const std::vector<std::string>& argv) {
      return capture_output(ProcessSpec{argv, caller_env, false, {}}).is_ok();
    };
    fmt::print("{}", check_build_report(detect_build_info(caller_env, probe)));
    return 0;
  }
  if (o.controller == Controller::kMpi) return run_under_mpirun(o, caller_env);
  SupervisorOptions supervision;
  supervision.verbose = o.verbose;
  ConsoleSink console;
  // Both before the store's thread starts: the guard is forked, and the thread inherits the mask.
  korovod::Result<std::unique_ptr<OrphanGuard>> guard = OrphanGuard::start(supervision.grace);
  if (!guard.is_ok()) say(console, fmt::format("no guard for the ranks if korovodrun is killed: {}", guard.status().message()));
  const JobSignalBlock signals;
  GroupWatcher* watcher = guard.is_ok() ? guard->get() : nullptr;
  if (o.elastic()) return run_elastic_job(o, caller_env, console, supervision, watcher);
  return run_tcp_job(o, caller_env, console, supervision, watcher);
}
