// build_mpijob: the MPIJob that `kubectl korovod submit` creates, case by case.
#include "cli/submit.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cli {
namespace {

using kube::Object;

SubmitRequest request() {
  SubmitRequest r;
  r.name = "digits";
  r.ns = "team-a";
  r.workers = 2;
  r.image = "korovod-worker-cpu:0.1.0";
  r.command = {"python3", "train.py", "--epochs", "3"};
  return r;
}

const Object& worker(const Object& job) { return job["spec"]["mpiReplicaSpecs"]["Worker"]; }
const Object& launcher_container(const Object& job) {
  return job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
}

TEST(Submit, ACpuJobHasOneRankPerWorkerAndMpirunStartsThem) {
  SubmitRequest r = request();
  r.cpu = "2";
  r.memory = "4Gi";
  const Object job = build_mpijob(r);
  EXPECT_EQ(job["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_EQ(job["kind"], "MPIJob");
  EXPECT_EQ(job["metadata"], (Object{{"name", "digits"}, {"namespace", "team-a"}}));
  EXPECT_EQ(job["spec"]["slotsPerWorker"], 1);
  EXPECT_EQ(job["spec"]["mpiImplementation"], "OpenMPI");
  EXPECT_EQ(worker(job)["replicas"], 2);
  const Object& c = worker(job)["template"]["spec"]["containers"][0];
  EXPECT_EQ(c, (Object{{"name", "worker"},
                       {"image", "korovod-worker-cpu:0.1.0"},
                       {"resources", {{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}},
                                      {"limits", {{"cpu", "2"}, {"memory", "4Gi"}}}}}}));
  EXPECT_FALSE(c.contains("command")) << "the image's sshd runs";
  EXPECT_EQ(launcher_container(job)["args"],
            (Object{"mpirun", "-n", "2", "--bind-to", "none", "--tag-output", "python3", "train.py", "--epochs", "3"}));
  EXPECT_EQ(job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"], 1);
}

TEST(Submit, AGpuJobHasOneRankPerGpuAndAsksForTheGpus) {
  SubmitRequest r = request();
  r.workers = 3;
  r.gpus_per_worker = 4;
  const Object job = build_mpijob(r);
  EXPECT_EQ(job["spec"]["slotsPerWorker"], 4);
  EXPECT_EQ(worker(job)["template"]["spec"]["containers"][0]["resources"],
            (Object{{"limits", {{"nvidia.com/gpu", "4"}}}}));
  EXPECT_EQ(launcher_container(job)["args"][2], "12");
}

TEST(Submit, ProcessesPerWorkerOverridesTheGpuCount) {
  SubmitRequest r = request();
  r.gpus_per_worker = 8;
  r.processes_per_worker = 2;
  const Object job = build_mpijob(r);
  EXPECT_EQ(job["spec"]["slotsPerWorker"], 2);
  EXPECT_EQ(launcher_container(job)["args"][2], "4");
  EXPECT_EQ(worker(job)["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "8");
}

TEST(Submit, ElasticRunsKorovodrunWithTheJobsDiscoveryScript) {
  SubmitRequest r = request();
  r.processes_per_worker = 2;
  r.elastic = parse_elastic("1:4");
  EXPECT_EQ(launcher_container(build_mpijob(r))["args"],
            (Object{"korovodrun", "-np", "4", "--min-np", "2", "--max-np", "8", "--host-discovery-script",
                    "/etc/mpi/discover_hosts.sh", "python3", "train.py", "--epochs", "3"}));
}

TEST(Submit, ACommandThatStartsItsRanksIsTakenAsGiven) {
  SubmitRequest r = request();
  r.command = {"/opt/openmpi/bin/mpirun", "-n", "2", "train.py"};
  EXPECT_EQ(launcher_container(build_mpijob(r))["args"], (Object{"/opt/openmpi/bin/mpirun", "-n", "2", "train.py"}));
  r.command = {"korovodrun", "-np", "2", "train.py"};
  EXPECT_EQ(launcher_container(build_mpijob(r))["args"][0], "korovodrun");
}

TEST(Submit, IntelAndMpichPrependTheRankAndProfileBecomesTheAnnotation) {
  SubmitRequest r = request();
  r.mpi = parse_mpi("Intel");
  r.profile = "a100-ib";
  const Object job = build_mpijob(r);
  EXPECT_EQ(job["spec"]["mpiImplementation"], "Intel");
  EXPECT_EQ(launcher_container(job)["args"], (Object{"mpirun", "-n", "2", "-prepend-rank", "python3", "train.py",
                                                      "--epochs", "3"}));
  EXPECT_EQ(job["metadata"]["annotations"], (Object{{"korovod.io/profile", "a100-ib"}}));
  EXPECT_EQ(build_mpijob([&] { r.mpi = parse_mpi("mpich"); return r; }())["spec"]["mpiImplementation"], "MPICH");
}

// Each mistake names the flag (or the argument) it is about.
TEST(Submit, ErrorsNameTheFlag) {
  auto message = [](SubmitRequest r) {
    try {
      build_mpijob(r);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SubmitRequest r = request();
  r.name = "Digits_1";
  EXPECT_NE(message(r).find("NAME 'Digits_1'"), std::string::npos) << message(r);
  r = request();
  r.image = "";
  EXPECT_EQ(message(r).rfind("--image", 0), 0u) << message(r);
  r = request();
  r.command.clear();
  EXPECT_NE(message(r).find("after --"), std::string::npos);
  r = request();
  r.cpu = "two";
  EXPECT_EQ(message(r).rfind("--cpu 'two'", 0), 0u) << message(r);
  r = request();
  r.workers = 5;
  r.elastic = ElasticRange{1, 4};
  EXPECT_EQ(message(r), "--elastic 1:4: --workers 5 must lie within it");
  r = request();
  r.processes_per_worker = 0;
  EXPECT_EQ(message(r).rfind("--processes-per-worker", 0), 0u);
  EXPECT_THROW(parse_elastic("4:1"), std::invalid_argument);
  EXPECT_THROW(parse_elastic("2"), std::invalid_argument);
  EXPECT_THROW(parse_mpi("lam"), std::invalid_argument);
}

}  // namespace
}  // namespace cli
