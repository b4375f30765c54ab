#include "local/rsh/rsh_agent.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include "kube/clock_sleep.h"
#include "local/pods/pod_launch.h"

namespace local {

RshRequest parse_rsh_args(const std::vector<std::string>& args) {
  static const std::set<std::string> with_value = {"-o", "-p", "-l", "-i", "-F", "-E", "-J",
                                                   "-b", "-c", "-m", "-S", "-W", "-w"};
  RshRequest req;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') break;
    if (with_value.count(a)) ++i;  // "-o X": skip the value too ("-oX" is one argument)
  }
  if (i >= args.size()) throw std::invalid_argument("usage: korovod-rsh [options] HOST COMMAND...");
  req.host = args[i++];
  if (const auto at = req.host.find('@'); at != std::string::npos) req.host.erase(0, at + 1);
  for (; i < args.size(); ++i) req.command += (req.command.empty() ? "" : " ") + args[i];
  if (req.command.empty()) throw std::invalid_argument("korovod-rsh: no command for " + req.host);
  return req;
}

std::pair<std::string, std::string> pod_of_host(const std::string& host,
                                                const std::string& default_ns) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (true) {
    const size_t dot = host.find('.', start);
    labels.push_back(host.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const std::string ns = labels.size() >= 3 && !labels[2].empty() ? labels[2] : default_ns;
  return {ns, labels[0]};
}

Exec rsh_exec(const RshRequest& request, const std::filesystem::path& pod_dir) {
  PodContext ctx = read_pod_context(pod_dir);
  ctx.spec.command = {"/bin/sh", "-c", request.command};
  set_env(ctx.spec.env, kRshPodEnv, pod_dir.string());
  return sandboxed(ctx.spec, ctx.isolation, ctx.bwrap_path);
}

namespace {

// True for a process that has exited but is not reaped yet (state Z or X in /proc/<pid>/stat).
bool is_zombie(const std::filesystem::path& proc_pid) {
  std::ifstream in(proc_pid / "stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;  // gone meanwhile
  const char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}

bool environ_has(const std::filesystem::path& proc_pid, const std::string& entry) {
  std::ifstream in(proc_pid / "environ", std::ios::binary);
  std::string var;
  while (std::getline(in, var, '\0')) {
    if (var == entry) return true;
  }
  return false;
}

}  // namespace

std::vector<pid_t> rsh_processes(const std::filesystem::path& pod_dir,
                                 const std::filesystem::path& proc) {
  const std::string entry = std::string(kRshPodEnv) + "=" + pod_dir.string();
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc, ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (environ_has(e.path(), entry) && !is_zombie(e.path())) out.push_back(std::stoi(name));
  }
  return out;
}

int stop_rsh_processes(const std::filesystem::path& pod_dir, std::chrono::milliseconds grace,
                       kube::Clock& clock) {
  const std::vector<pid_t> found = rsh_processes(pod_dir);
  if (found.empty()) return 0;
  for (pid_t p : found) kill(p, SIGTERM);
  const auto deadline = clock.steady_now() + grace;
  while (!rsh_processes(pod_dir).empty() && clock.steady_now() < deadline) {
    kube::sleep_until(clock, std::min(deadline, clock.steady_now() + std::chrono::milliseconds(20)));
  }
  for (pid_t p : rsh_processes(pod_dir)) kill(p, SIGKILL);
  return static_cast<int>(found.size());
}

}  // namespace local
