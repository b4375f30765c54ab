#include "mpijob/testing/fixtures.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace mpijob::testing {

kube::Object pi_job(int workers, const std::string& impl) {
  auto container = [](const std::string& name, kube::Object command, kube::Object args) {
    return kube::Object{{"name", name},
                        {"image", "mpioperator/mpi-pi:openmpi"},
                        {"securityContext", {{"runAsUser", 1000}}},
                        {"command", command},
                        {"args", args},
                        {"resources", {{"limits", {{"cpu", 1}, {"memory", "1Gi"}}}}}};
  };
  return {
      {"apiVersion", "kubeflow.org/v2beta1"},
      {"kind", "MPIJob"},
      {"metadata", {{"name", "pi"}, {"namespace", "default"}, {"uid", kJobUid}}},
      {"spec",
       {{"slotsPerWorker", 1},
        {"mpiImplementation", impl},
        {"runPolicy", {{"cleanPodPolicy", "Running"}, {"ttlSecondsAfterFinished", 60}}},
        {"sshAuthMountPath", "/home/mpiuser/.ssh"},
        {"mpiReplicaSpecs",
         {{"Launcher",
           {{"replicas", 1},
            {"template",
             {{"spec",
               {{"containers",
                 {container("mpi-launcher", {"mpirun"}, {"-n", "2", "/home/mpiuser/pi"})}}}}}}}},
          {"Worker",
           {{"replicas", workers},
            {"template",
             {{"spec",
               {{"containers",
                 {container("mpi-worker", {"/usr/sbin/sshd"},
                            {"-De", "-f", "/home/mpiuser/.sshd_config"})}}}}}}}}}}}}};
}

kube::Object pod(const std::string& name, const std::string& phase, const std::string& owner_uid,
                 const std::string& uid) {
  kube::Object p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "default"},
        {"uid", uid.empty() ? "uid-" + name : uid},
        {"creationTimestamp", "2026-01-01T00:00:00Z"},
        {"ownerReferences", {{{"uid", owner_uid}, {"controller", true}, {"name", "owner"}}}}}},
      {"status", {{"phase", phase}}}};
  if (phase == "Running") {
    p["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
  }
  return p;
}

kube::Object worker(const std::string& job, int index, const std::string& phase,
                    const std::string& uid) {
  kube::Object p = pod(job + "-worker-" + std::to_string(index), phase, kJobUid, uid);
  p["metadata"]["labels"] = {{kLabelJobName, job}, {kLabelJobRole, "worker"},
                             {kLabelOperatorName, kOperatorName},
                             {kLabelReplicaIndex, std::to_string(index)}};
  return p;
}

kube::Object launcher_job(const std::string& job, const std::string& condition,
                          const std::string& reason, int failed) {
  kube::Object j = {{"apiVersion", "batch/v1"},
                    {"kind", "Job"},
                    {"metadata",
                     {{"name", job + "-launcher"},
                      {"namespace", "default"},
                      {"uid", "launcher-uid"},
                      {"ownerReferences", {{{"uid", kJobUid}, {"controller", true}}}}}},
                    {"spec", kube::Object::object()},
                    {"status", kube::Object::object()}};
  if (failed) j["status"]["failed"] = failed;
  if (!condition.empty()) {
    j["status"]["conditions"] = {{{"type", condition}, {"status", "True"}, {"reason", reason}}};
    if (condition == "Complete") j["status"]["completionTime"] = "2026-01-01T01:00:00Z";
  }
  return j;
}

kube::Object read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return kube::Object::parse(in);
}

void expect_golden(const std::string& name, const kube::Object& actual) {
  const std::string path = std::string(KOROVOD_MPIJOB_TESTDATA) + "/" + name + ".json";
  const char* update = std::getenv("KOROVOD_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual.dump(2) << "\n";
    // Rewritten, not checked: the run must not read as a pass (docs/testing.md, "Goldens").
    GTEST_SKIP() << "KOROVOD_UPDATE_GOLDEN=1 rewrote " << path
                 << " without checking it; review `git diff` against "
                    "testdata/mpi-operator-v0.8-objects.json before committing";
  }
  kube::Object expected;
  try {
    expected = read_json_file(path);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << " (run with KOROVOD_UPDATE_GOLDEN=1 to create it)";
    return;
  }
  EXPECT_EQ(expected, actual) << "golden " << path << " differs; JSON patch expected->actual:\n"
                              << kube::Object::diff(expected, actual).dump(2);
}

}  // namespace mpijob::testing
