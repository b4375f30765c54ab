// korovod-rsh: the rsh agent of local mode (see operator/local/rsh/rsh_agent.h).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "local/process/process.h"
#include "local/rsh/rsh_agent.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    const auto req = local::parse_rsh_args(args);
    const char* pods = std::getenv("KOROVOD_PODS_DIR");
    const char* ns = std::getenv("KOROVOD_POD_NAMESPACE");
    if (!pods) throw std::runtime_error("KOROVOD_PODS_DIR is not set (korovod run sets it)");
    const auto [pod_ns, pod] = local::pod_of_host(req.host, ns ? ns : "default");
    // Like ssh's ConnectionAttempts: a worker pod may not have started yet.
    const auto pod_dir = std::filesystem::path(pods) / pod_ns / pod;
    for (int i = 0; i < 300 && !std::filesystem::exists(pod_dir / "context.json"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const korovod::os::ExecArrays exec = local::exec_arrays(local::rsh_exec(req, pod_dir));
    execve(exec.program().c_str(), exec.argv(), exec.envp());
    throw std::runtime_error("exec " + exec.program() + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    std::cerr << "korovod-rsh: " << e.what() << "\n";
    return 255;  // what ssh returns when it cannot connect
  }
}
