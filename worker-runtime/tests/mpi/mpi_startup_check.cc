// Rank 0's startup line, as the real MPI assembly (mpi_runtime_options) produces it: once, on
// rank 0 only, at the default log level, naming the data plane actually chosen.
#include <mutex>
#include <string>
#include <vector>

#include "mpi_check.h"

namespace korovod::mpitest {

void check_startup_line(Checker& c, int size) {
  Config config = test_config();
  config.log_level = LogLevel::kWarning;  // the default level: the line must still show
  config.network_env = {{"NCCL_SOCKET_IFNAME", "lo"}};
  Result<RuntimeOptions> options = mpi_runtime_options(config, nullptr, {});
  if (!MPI_CHECK(c, options.is_ok(), "mpi_runtime_options: {}", options.status().to_string())) return;
  std::mutex mu;
  std::vector<std::string> lines;
  options->log_sink = [&](LogLevel, const std::string& m) {
    std::lock_guard lock(mu);
    if (m.rfind("korovod: data plane:", 0) == 0) lines.push_back(m);
  };
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(options).value());
  if (!MPI_CHECK(c, rt.is_ok(), "runtime: {}", rt.status().to_string())) return;
  MPI_CHECK(c, (*rt)->shutdown().is_ok(), "shutdown");
  std::lock_guard lock(mu);
  if (c.rank() != 0) {
    MPI_CHECK(c, lines.empty(), "a rank other than 0 logged the startup line: {}", fmt::join(lines, " | "));
    return;
  }
  if (!MPI_CHECK(c, lines.size() == 1, "rank 0 logged {} startup lines, not 1", lines.size())) return;
  const std::string plane = config.cpu_operations == "mpi" ? "MPI" : config.cpu_operations == "tcp" ? "TCP" : "SHM";
#ifdef KOROVOD_HAVE_NCCL
  // NCCL; on a machine with fewer GPUs than ranks they would share one: host staging.
  const std::vector<std::string> gpus = {"GPU data plane: NCCL 2.",
                                         fmt::format("GPU data plane: host staging through {} (", plane)};
#else
  const std::vector<std::string> gpus = {"GPU data plane: none (built without NCCL)"};
#endif
  // Shared memory carries the negotiation too, once MPI has set it up (process_set.cc).
  const std::string control = plane == "SHM" ? "SHM (MPI for setup)" : "MPI";
  const std::string head = fmt::format("korovod: data plane: {} ({} ranks on 1 host), control: {}; ", plane, size, control);
  bool starts = false;
  for (const std::string& gpu : gpus) starts = starts || lines[0].rfind(head + gpu, 0) == 0;
  MPI_CHECK(c, starts, "startup line '{}' does not start with '{}' and one of '{}'", lines[0], head,
            fmt::join(gpus, "', '"));
  MPI_CHECK(c, lines[0].ends_with("; NCCL_SOCKET_IFNAME=lo"), "startup line '{}' lacks the network settings", lines[0]);
}

}  // namespace korovod::mpitest
