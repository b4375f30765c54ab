// `korovod run --ssh`: the production path, locally. Each worker's default command (the
// operator's `/usr/sbin/sshd -De`) becomes a real sshd started with docker/ssh/sshd_config,
// adjusted only by flags: -p <free loopback port>, -h <a host key made for the pod>,
// -o ListenAddress=127.0.0.1, -o UsePAM=no (PAM wants a real login session), -o PidFile=none,
// -o AuthorizedKeysFile=<sshAuthMountPath>/authorized_keys (the job's Secret as mounted) and
// -o SetEnv=... (the pod's PATH and environment, which sshd would otherwise reset).
// The launcher gets docker/ssh/ssh_config with one `Host <fqdn> <pod>` block per worker in
// front (HostName 127.0.0.1, Port <port>), mounted at /etc/ssh/ssh_config, and mpirun's
// OMPI_MCA_plm_rsh_agent is left at ssh.
// The pod's host key is made with ssh-keygen, run through the ProcessLauncher it is given.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>

#include "local/process/process_launcher.h"
#include "kube/mutex.h"
#include "local/sandbox/sandbox.h"

namespace local {

// A free TCP port on 127.0.0.1 (bound and released; the caller uses it right away).
int free_loopback_port();

class SshMode {
 public:
  // tool_env: the environment ssh-keygen runs with (the host's PATH).
  SshMode(std::filesystem::path ssh_config_dir, std::filesystem::path work_dir,
          ProcessLauncher& launcher, EnvList tool_env)
      : config_dir_(std::move(ssh_config_dir)), work_dir_(std::move(work_dir)),
        launcher_(launcher), tool_env_(std::move(tool_env)) {}

  // Worker: makes the pod's host key <pod_dir>/ssh_host_ed25519_key (throws, with ssh-keygen's
  // output, when that fails) and replaces the launch's command with sshd (see above).
  void adjust_worker(const std::string& pod, const std::string& fqdn,
                     const std::string& ssh_mount_path, const std::filesystem::path& pod_dir,
                     LaunchSpec& launch);
  // Launcher: mounts the generated ssh_config naming every worker (pod, fqdn); with no bwrap,
  // points the rsh agent at it.
  void adjust_launcher(LaunchSpec& launch, Isolation isolation, const std::string& ssh_mount_path,
                       const std::vector<std::pair<std::string, std::string>>& workers);

  // The ssh_config text for the workers registered so far.
  std::string ssh_config() const;
  // The loopback port of a worker pod, chosen on first use and kept for pods of that name, so
  // the launcher's ssh_config stays right whichever pod starts first and across restarts.
  int port_for(const std::string& pod, const std::string& fqdn);

 private:
  const std::filesystem::path config_dir_, work_dir_;
  ProcessLauncher& launcher_;
  const EnvList tool_env_;
  mutable kube::Mutex mu_;
  std::map<std::string, std::pair<std::string, int>> hosts_ KOROVOD_GUARDED_BY(mu_);  // pod -> (fqdn, port)
};

// The sshd -o SetEnv= value for an environment ("A=1 B=\"x y\"").
std::string sshd_setenv(const EnvList& env);

}  // namespace local
