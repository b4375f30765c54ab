#include "control_plane.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "../kube/cluster.h"
#include "../operator/harness.h"

namespace chaos {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string source_dir() {
  const char* d = std::getenv("KOROVOD_SOURCE_DIR");
  return d && *d ? d : KOROVOD_SOURCE_DIR_DEFAULT;
}

}  // namespace

ControlPlane::ControlPlane() : dir_(kube::testing::cluster_dir()) {}

std::string ControlPlane::testcluster(const std::string& command, const std::string& component,
                                      const std::string& signal) const {
  std::vector<std::string> argv = {source_dir() + "/tests/cluster/testcluster", command};
  if (!component.empty()) argv.push_back(component);
  argv.insert(argv.end(), {"--state-dir", dir_});
  if (!signal.empty()) argv.insert(argv.end(), {"--signal", signal});
  const auto r = optest::run_command(argv, "", std::chrono::seconds(180));
  if (r.exit_code != 0) {
    throw std::runtime_error("testcluster " + command + " " + component + " failed (" +
                             std::to_string(r.exit_code) + "): " + r.output);
  }
  return r.output;
}

void ControlPlane::crash_and_restart(const std::string& component, std::chrono::milliseconds down) {
  testcluster("stop", component, "KILL");
  std::this_thread::sleep_for(down);
  testcluster("start", component);
}

void ControlPlane::restart(const std::string& component) { testcluster("restart", component); }

void ControlPlane::ensure_up() {
  // Dependencies first: etcd, then the API server, then its clients.
  for (const char* c : {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
    testcluster("start", c);
  }
}

int ControlPlane::apiserver_port() const {
  const std::string url = read_file(dir_ + "/apiserver-url");  // https://127.0.0.1:PORT
  return std::stoi(url.substr(url.rfind(':') + 1));
}

std::string ControlPlane::kubeconfig_via(int port, const std::string& name) const {
  const std::string text = read_file(dir_ + "/kubeconfig");
  const std::string proxied = std::regex_replace(
      text, std::regex("server: https://127\\.0\\.0\\.1:[0-9]+"),
      "server: https://127.0.0.1:" + std::to_string(port));
  const std::string path = dir_ + "/" + name + ".kubeconfig";
  std::ofstream(path) << proxied;
  return path;
}

}  // namespace chaos
