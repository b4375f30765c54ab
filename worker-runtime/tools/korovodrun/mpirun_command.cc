#include "mpirun_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "child_process.h"
#include "rank_env.h"

namespace korovod::launcher {
namespace {

// Open MPI's rsh launcher goes wrong from this many hosts on without these (mpi_run.py).
constexpr size_t kLargeClusterHosts = 64;

void add(std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  argv.insert(argv.end(), words);
}

}  // namespace

std::vector<std::string> mpirun_command(const LaunchOptions& o, const std::vector<HostSlots>& hosts, const EnvMap& env,
                                        bool running_as_root) {
  std::vector<std::string> argv{"mpirun"};
  if (running_as_root) argv.push_back("--allow-run-as-root");
  add(argv, {"--tag-output", "-np", std::to_string(o.num_proc), "-H", hosts_to_string(hosts)});
  add(argv, {"-bind-to", "none", "-map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib"});
  if (hosts.size() >= kLargeClusterHosts) {
    add(argv, {"-mca", "plm_rsh_no_tree_spawn", "true", "-mca", "plm_rsh_num_concurrent", std::to_string(hosts.size())});
  }
  std::vector<std::string> ssh_args;
  if (o.ssh_port) ssh_args.push_back(fmt::format("-p {}", *o.ssh_port));
  if (!o.ssh_identity_file.empty()) ssh_args.push_back("-i " + o.ssh_identity_file);
  if (!ssh_args.empty()) add(argv, {"-mca", "plm_rsh_args", fmt::format("{}", fmt::join(ssh_args, " "))});
  if (!o.network_interfaces.empty()) {
    add(argv, {"-mca", "btl_tcp_if_include", fmt::format("{}", fmt::join(o.network_interfaces, ","))});
  }
  for (const auto& [name, value] : env) {
    if (is_exportable(name)) add(argv, {"-x", name});
  }
  argv.insert(argv.end(), o.command.begin(), o.command.end());
  return argv;
}

bool is_open_mpi_version(const std::string& version_output) {
  return version_output.find("Open MPI") != std::string::npos || version_output.find("OpenRTE") != std::string::npos;
}

Status exec_mpirun(const std::vector<std::string>& argv, const EnvMap& env) {
  Result<os::ExecArrays> exec = os::ExecArrays::resolve(argv, os::EnvPairs(env.begin(), env.end()));
  if (!exec.is_ok()) {
    return Status::invalid_argument(
        "--mpi: mpirun is not on PATH (install Open MPI, or leave out --mpi: korovodrun then starts the ranks itself)");
  }
  const std::string& program = exec->program();
  Result<std::string> version = capture_output({{program, "--version"}, env, false, ""});
  if (!version.is_ok()) return Status::unknown(fmt::format("--mpi: {}", version.status().message()));
  if (!is_open_mpi_version(*version)) {
    return Status::invalid_argument(fmt::format(
        "--mpi: {} is not Open MPI's mpirun (its --version said {:?}); only Open MPI's command line is built",
        program, *version));
  }
  execve(program.c_str(), exec->argv(), exec->envp());
  return Status::unknown(fmt::format("--mpi: cannot execute {}: {}", program, std::strerror(errno)));
}

}  // namespace korovod::launcher
