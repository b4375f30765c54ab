#include "local/sandbox/sandbox.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace local {
namespace {

bool starts_path(const std::string& s, size_t at, const std::string& prefix) {
  if (s.compare(at, prefix.size(), prefix) != 0) return false;
  const size_t end = at + prefix.size();
  return end == s.size() || s[end] == '/' || s[end] == ':' || s[end] == ' ';
}

std::vector<Mount> parents_first(std::vector<Mount> mounts) {
  std::stable_sort(mounts.begin(), mounts.end(), [](const Mount& a, const Mount& b) {
    return a.mount_path.size() < b.mount_path.size();
  });
  return mounts;
}

}  // namespace

bool bwrap_usable(const std::string& bwrap_path, std::string* why) {
  if (access(bwrap_path.c_str(), X_OK) != 0) {
    *why = bwrap_path + " not found";
    return false;
  }
  const std::string cmd = bwrap_path +
                          " --bind / / --dev-bind /dev /dev --proc /proc --unshare-pid "
                          "--unshare-uts --hostname probe --die-with-parent -- /bin/true 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *why = "cannot run " + bwrap_path;
    return false;
  }
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  *why = "bwrap failed: " + (out.empty() ? std::string("exit status ") + std::to_string(status) : out);
  while (!why->empty() && why->back() == '\n') why->pop_back();
  return false;
}

std::string rewrite_mount_paths(const std::string& value, const std::vector<Mount>& mounts) {
  // Longest mount path first, so /etc/mpi/x wins over /etc/mpi.
  auto sorted = parents_first(mounts);
  std::reverse(sorted.begin(), sorted.end());
  std::string out;
  for (size_t i = 0; i < value.size();) {
    const bool boundary = i == 0 || value[i - 1] == ':' || value[i - 1] == '=' || value[i - 1] == ' ';
    bool replaced = false;
    for (const auto& m : sorted) {
      if (boundary && !m.mount_path.empty() && starts_path(value, i, m.mount_path)) {
        out += m.host_path.string();
        i += m.mount_path.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += value[i++];
  }
  return out;
}

Exec sandboxed(const LaunchSpec& spec, Isolation isolation, const std::string& bwrap_path) {
  Exec exec;
  exec.env = spec.env;
  if (isolation == Isolation::Rewrite) {
    for (const auto& arg : spec.command) exec.argv.push_back(rewrite_mount_paths(arg, spec.mounts));
    for (auto& [k, v] : exec.env) v = rewrite_mount_paths(v, spec.mounts);
    const std::string wd = rewrite_mount_paths(spec.working_dir, spec.mounts);
    if (!wd.empty()) exec.argv.insert(exec.argv.begin(), {"/usr/bin/env", "-C", wd});
    return exec;
  }
  if (isolation == Isolation::Docker) {
    throw std::logic_error("a docker container is started with start_docker_container, not sandboxed");
  }
  exec.argv = {bwrap_path,        "--bind",     "/",     "/",           "--dev-bind",
               "/dev",            "/dev",       "--proc", "/proc",      "--unshare-pid",
               "--unshare-uts",   "--hostname", spec.hostname, "--die-with-parent"};
  for (const auto& m : parents_first(spec.mounts)) {
    // bwrap cannot follow an absolute symlink on the way to a mount point (/var/run -> /run):
    // give it the host's resolved path, which is the same path inside (/ is bound to /).
    std::error_code ec;
    std::string dest = std::filesystem::weakly_canonical(m.mount_path, ec).string();
    if (ec || dest.empty()) dest = m.mount_path;
    exec.argv.insert(exec.argv.end(),
                     {m.read_only ? "--ro-bind" : "--bind", m.host_path.string(), dest});
  }
  if (!spec.working_dir.empty()) exec.argv.insert(exec.argv.end(), {"--chdir", spec.working_dir});
  exec.argv.push_back("--");
  exec.argv.insert(exec.argv.end(), spec.command.begin(), spec.command.end());
  return exec;
}

}  // namespace local
