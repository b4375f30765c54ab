#include "local/pods/pod_launch.h"

#include <fstream>
#include <stdexcept>

#include "kube/object_meta.h"

namespace local {
namespace fs = std::filesystem;

LaunchSpec container_launch(const kube::Object& pod, const kube::Object& container,
                            const EnvList& container_env, const std::vector<Mount>& mounts,
                            const fs::path& pod_dir, const LaunchDefaults& defaults) {
  LaunchSpec spec;
  for (const auto& a : field(container, "command")) spec.command.push_back(a);
  for (const auto& a : field(container, "args")) spec.command.push_back(a);
  if (spec.command.empty()) {
    throw std::runtime_error("container \"" + container.value("name", "") +
                             "\" has neither command nor args; local mode does not know the "
                             "image's ENTRYPOINT/CMD");
  }
  const auto& pspec = field(pod, "spec");
  spec.hostname = pspec.value("hostname", kube::name_of(pod));
  std::string path;
  for (const auto& d : defaults.path_prepend) path += d + ":";
  path += defaults.host_path_env;
  set_env(spec.env, "PATH", path);
  if (!defaults.python_path.empty()) {
    std::string python_path;
    for (const auto& d : defaults.python_path) python_path += (python_path.empty() ? "" : ":") + d;
    set_env(spec.env, "PYTHONPATH", python_path);
  }
  set_env(spec.env, "HOSTNAME", spec.hostname);
  set_env(spec.env, "HOME", defaults.home);
  for (const auto& [k, v] : defaults.extra_env) set_env(spec.env, k, v);
  for (const auto& [k, v] : container_env) set_env(spec.env, k, v);
  spec.working_dir = container.value("workingDir", pod_dir.string());
  spec.mounts = mounts;
  return spec;
}

LaunchSpec image_launch(const kube::Object& pod, const kube::Object& container,
                        const EnvList& container_env, const std::vector<Mount>& mounts,
                        const LaunchDefaults& defaults) {
  LaunchSpec spec;
  for (const auto& a : field(container, "command")) spec.command.push_back(a);
  for (const auto& a : field(container, "args")) spec.command.push_back(a);
  spec.hostname = field(pod, "spec").value("hostname", kube::name_of(pod));
  for (const auto& [k, v] : defaults.extra_env) set_env(spec.env, k, v);
  for (const auto& [k, v] : container_env) set_env(spec.env, k, v);
  spec.working_dir = container.value("workingDir", "");
  spec.mounts = mounts;
  return spec;
}

std::vector<std::string> build_tree_python_path(const fs::path& bin_dir) {
  const fs::path python_dir = bin_dir.parent_path() / "python";
  std::error_code ec;
  if (!fs::is_directory(python_dir / "korovod", ec)) return {};
  return {fs::weakly_canonical(python_dir, ec).string()};
}

EnvList local_pod_env(const fs::path& work_dir, bool as_root) {
  EnvList env;
  set_env(env, "KOROVOD_LOCAL_RUN", work_dir.string());
  set_env(env, "KOROVOD_PODS_DIR", (work_dir / "pods").string());
  set_env(env, "OMPI_MCA_btl_vader_single_copy_mechanism", "none");
  if (as_root) {
    set_env(env, "OMPI_ALLOW_RUN_AS_ROOT", "1");
    set_env(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  }
  return env;
}

std::string job_role(const kube::Object& pod) {
  return field(field(pod, "metadata"), "labels").value("training.kubeflow.org/job-role", "");
}

bool is_default_sshd(const LaunchSpec& l) {
  return l.command == std::vector<std::string>{"/usr/sbin/sshd", "-De"};
}

namespace {

// The operator's default worker command in either launch mode (mpijob/launch_mode.h).
bool is_default_worker_command(const LaunchSpec& l) {
  return is_default_sshd(l) || l.command == std::vector<std::string>{"korovod-agent", "serve"};
}

}  // namespace

namespace {

// <shim_dir>/ssh -> <bin_dir>/korovod-rsh, made once (pods of one run share it).
void install_ssh_shim(const fs::path& bin_dir, const fs::path& shim_dir) {
  const fs::path link = shim_dir / "ssh", target = bin_dir / "korovod-rsh";
  std::error_code ec;
  if (fs::read_symlink(link, ec) == target) return;
  fs::create_directories(shim_dir);
  const fs::path tmp = shim_dir / ".ssh.korovod-tmp";
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp);
  fs::rename(tmp, link);
}

}  // namespace

void wire_for_rsh_agent(const kube::Object& pod, LaunchSpec& launch, const fs::path& bin_dir,
                        const fs::path& shim_dir) {
  set_env(launch.env, "KOROVOD_POD_NAMESPACE", kube::namespace_of(pod));
  const std::string role = job_role(pod);
  if (role == "worker" && is_default_worker_command(launch)) {
    launch.command = {"/bin/sh", "-c",
                      "echo \"local worker $(hostname): ready for mpirun (korovod-rsh)\"; "
                      "exec sleep infinity"};
  } else if (role == "launcher") {
    set_env(launch.env, "OMPI_MCA_plm_rsh_agent", (bin_dir / "korovod-rsh").string());
    // A job in agent mode tells korovodrun to use korovod-agent's rsh; locally it is korovod-rsh.
    if (get_env(launch.env, "KOROVOD_RSH_AGENT")) {
      set_env(launch.env, "KOROVOD_RSH_AGENT", (bin_dir / "korovod-rsh").string());
    }
    install_ssh_shim(bin_dir, shim_dir);
    const std::string path = get_env(launch.env, "PATH").value_or("");
    set_env(launch.env, "PATH", shim_dir.string() + (path.empty() ? "" : ":" + path));
  }
}

void write_pod_context(const fs::path& pod_dir, const LaunchSpec& spec, Isolation isolation,
                       const std::string& bwrap_path) {
  kube::Object mounts = kube::Object::array();
  for (const auto& m : spec.mounts) {
    mounts.push_back({{"hostPath", m.host_path.string()}, {"mountPath", m.mount_path},
                      {"readOnly", m.read_only}});
  }
  kube::Object ctx = {{"env", spec.env}, {"workingDir", spec.working_dir},
                      {"hostname", spec.hostname}, {"mounts", mounts},
                      {"isolation", isolation == Isolation::Bwrap ? "bwrap" : "rewrite"},
                      {"bwrap", bwrap_path}};
  const fs::path tmp = pod_dir / "context.json.tmp";
  std::ofstream(tmp) << ctx.dump(2);
  fs::rename(tmp, pod_dir / "context.json");
}

PodContext read_pod_context(const fs::path& pod_dir) {
  std::ifstream in(pod_dir / "context.json");
  if (!in) throw std::runtime_error("no running pod at " + pod_dir.string());
  kube::Object ctx = kube::Object::parse(in);
  PodContext out;
  out.spec.env = ctx["env"].get<EnvList>();
  out.spec.working_dir = ctx.value("workingDir", "");
  out.spec.hostname = ctx.value("hostname", "");
  for (const auto& m : ctx["mounts"]) {
    out.spec.mounts.push_back({m["hostPath"].get<std::string>(), m["mountPath"], m["readOnly"]});
  }
  out.isolation = ctx.value("isolation", "") == "bwrap" ? Isolation::Bwrap : Isolation::Rewrite;
  out.bwrap_path = ctx.value("bwrap", "");
  return out;
}

}  // namespace local
