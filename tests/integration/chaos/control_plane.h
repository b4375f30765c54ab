// The chaos tests' hold on their own control plane (tests/cluster/testcluster, started for them
// by ctest's chaos_cluster fixture): restart a component the way it crashes (SIGKILL), take it
// away for a while, bring everything back, and the pieces of the cluster the tests need.
#pragma once

#include <chrono>
#include <string>

namespace chaos {

class ControlPlane {
 public:
  ControlPlane();  // the cluster in kube::testing::cluster_dir()
  // SIGKILL `component` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), keep it
  // down for `down`, start it again with its old command line and wait until it is ready.
  // Throws when testcluster fails.
  void crash_and_restart(const std::string& component, std::chrono::milliseconds down);
  // Stops `component` gracefully (SIGTERM) and starts it again (a rolling update).
  void restart(const std::string& component);
  // Starts whatever is not running (after a test, so later ones find a whole cluster).
  void ensure_up();
  int apiserver_port() const;
  // A copy of the cluster's kubeconfig whose server is https://127.0.0.1:<port> (a proxy).
  std::string kubeconfig_via(int port, const std::string& name) const;

 private:
  std::string testcluster(const std::string& command, const std::string& component,
                          const std::string& signal = "") const;
  std::string dir_;
};

}  // namespace chaos
