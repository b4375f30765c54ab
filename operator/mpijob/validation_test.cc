// Validation (every rule of validation.go) and defaulting (incl. korovod's differences).
#include <gtest/gtest.h>

#include "mpijob/defaults.h"
#include "mpijob/testing/fixtures.h"
#include "mpijob/validation.h"

namespace mpijob {
namespace {

std::vector<std::string> errors_of(kube::Object obj) {
  MPIJob job(std::move(obj));
  apply_defaults(job);
  std::vector<std::string> out;
  for (const auto& e : validate(job)) out.push_back(e.to_string());
  return out;
}

TEST(Validation, PiExampleIsValid) { EXPECT_TRUE(errors_of(testing::pi_job()).empty()); }

TEST(Validation, LaunchAnnotationIsSshOrAgentAndAgentNeedsOpenMpi) {
  kube::Object job = testing::pi_job();
  job["metadata"]["annotations"] = {{"korovod.io/launch", "agent"}};
  EXPECT_TRUE(errors_of(job).empty());
  job["metadata"]["annotations"]["korovod.io/launch"] = "sshd";
  auto errs = errors_of(job);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0],
            "metadata.annotations[korovod.io/launch]: Unsupported value: \"sshd\": supported values: \"agent\", \"ssh\"");
  kube::Object intel = testing::pi_job(2, "Intel");
  intel["metadata"]["annotations"] = {{"korovod.io/launch", "agent"}};
  errs = errors_of(intel);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "spec.mpiImplementation: Invalid value: Intel: korovod.io/launch: agent needs OpenMPI "
                                 "(mpirun or korovodrun in the launcher)");
}

TEST(Validation, NameStartingWithDigitIsRejected) {
  kube::Object job = testing::pi_job();
  job["metadata"]["name"] = "1-foo";
  auto errs = errors_of(job);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("metadata.name: Invalid value: \"1-foo\""), std::string::npos) << errs[0];
  EXPECT_NE(errs[0].find("\"1-foo-worker-1\""), std::string::npos) << errs[0];
}

TEST(Validation, LongNameWithThousandWorkersIsRejected) {
  kube::Object job = testing::pi_job(1000);
  job["metadata"]["name"] = std::string(53, 'a');  // + "-worker-999" = 64 characters
  auto errs = errors_of(job);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("must be no more than 63 characters"), std::string::npos) << errs[0];
  job["metadata"]["name"] = std::string(52, 'a');
  EXPECT_TRUE(errors_of(job).empty());
}

TEST(Validation, LauncherReplicasMustBeOne) {
  kube::Object job = testing::pi_job();
  job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2;
  EXPECT_EQ(errors_of(job), std::vector<std::string>{
                                "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1"});
}

TEST(Validation, WorkerReplicasOmittedIsDefaultedToZeroAndRejected) {
  kube::Object job = testing::pi_job();
  job["spec"]["mpiReplicaSpecs"]["Worker"].erase("replicas");
  EXPECT_EQ(errors_of(job),
            std::vector<std::string>{"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: "
                                     "must be greater than or equal to 1"});
}

TEST(Validation, MissingLauncherAndContainers) {
  kube::Object job = testing::pi_job();
  job["spec"]["mpiReplicaSpecs"].erase("Launcher");
  job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = kube::Object::array();
  EXPECT_EQ(errors_of(job),
            (std::vector<std::string>{
                "spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec",
                "spec.mpiReplicaSpecs[Worker].template.spec.containers: Required value: must "
                "define at least one container"}));
}

TEST(Validation, RejectsAlwaysAndExitCodeRestartPolicies) {
  kube::Object job = testing::pi_job();
  job["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "Always";
  job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "ExitCode";
  auto errs = errors_of(job);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0],
            "spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: \"ExitCode\": "
            "supported values: \"Never\", \"OnFailure\"");
}

TEST(Validation, RunPolicyFields) {
  kube::Object job = testing::pi_job();
  job["spec"]["runPolicy"] = {{"cleanPodPolicy", "Sometimes"},
                              {"backoffLimit", -1},
                              {"ttlSecondsAfterFinished", -2},
                              {"activeDeadlineSeconds", -3},
                              {"managedBy", "someone"}};
  job["spec"]["slotsPerWorker"] = -1;
  job["spec"]["mpiImplementation"] = "LAM";
  auto errs = errors_of(job);
  EXPECT_EQ(errs.size(), 7u);
  const std::string all = format_errors([&] {
    MPIJob j(job);
    apply_defaults(j);
    return validate(j);
  }());
  for (const char* field : {"cleanPodPolicy", "backoffLimit", "ttlSecondsAfterFinished",
                            "activeDeadlineSeconds", "managedBy", "slotsPerWorker",
                            "mpiImplementation"}) {
    EXPECT_NE(all.find(field), std::string::npos) << field << " in " << all;
  }
  EXPECT_EQ(all.front(), '[');
}

TEST(Validation, MultiKueueManagedByIsAccepted) {
  kube::Object job = testing::pi_job();
  job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  EXPECT_TRUE(errors_of(job).empty());
}

TEST(Validation, WrongJsonTypeIsAnErrorNotACrash) {
  kube::Object job = testing::pi_job();
  job["spec"]["slotsPerWorker"] = "many";
  EXPECT_FALSE(errors_of(job).empty());
}

TEST(Defaults, ReferenceDefaultsPlusCleanPodPolicyRunning) {
  kube::Object obj = testing::pi_job();
  obj["spec"].erase("runPolicy");
  obj["spec"].erase("slotsPerWorker");
  obj["spec"].erase("sshAuthMountPath");
  obj["spec"].erase("mpiImplementation");
  obj["spec"]["mpiReplicaSpecs"]["Launcher"].erase("replicas");
  MPIJob job(obj);
  apply_defaults(job);
  EXPECT_EQ(job.clean_pod_policy(), "Running");
  EXPECT_EQ(job.slots_per_worker(), 1);
  EXPECT_EQ(job.ssh_auth_mount_path(), "/root/.ssh");
  EXPECT_EQ(job.mpi_implementation(), MpiImplementation::OpenMPI);
  EXPECT_EQ(job.launcher_creation_policy(), "AtStartup");
  EXPECT_FALSE(job.run_launcher_as_worker());
  EXPECT_EQ(job.replicas(ReplicaType::Launcher), 1);
  EXPECT_EQ(job.restart_policy(ReplicaType::Launcher), "OnFailure");
  EXPECT_EQ(job.restart_policy(ReplicaType::Worker), "Never");
}

TEST(Defaults, SlotsFollowWorkerGpus) {
  kube::Object obj = testing::pi_job();
  obj["spec"].erase("slotsPerWorker");
  obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
     ["limits"]["nvidia.com/gpu"] = "8";
  MPIJob job(obj);
  apply_defaults(job);
  EXPECT_EQ(job.slots_per_worker(), 8);

  obj["spec"]["slotsPerWorker"] = 2;  // an explicit value wins
  MPIJob explicit_slots(obj);
  apply_defaults(explicit_slots);
  EXPECT_EQ(explicit_slots.slots_per_worker(), 2);
}

TEST(Types, StatusRoundTripKeepsUnknownFields) {
  kube::Object st = {{"conditions", {{{"type", "Created"}, {"status", "True"}, {"reason", "R"}}}},
                     {"replicaStatuses", {{"Worker", {{"active", 2}, {"selector", "x=y"}}}}},
                     {"startTime", "2026-01-01T00:00:00Z"},
                     {"restartCount", 1},
                     {"futureField", {{"a", 1}}}};
  EXPECT_EQ(status_to_json(status_from_json(st)), st);
}

TEST(Types, UnknownSpecFieldsSurvive) {
  kube::Object obj = testing::pi_job();
  obj["spec"]["someFutureField"] = {{"x", 1}};
  MPIJob job(obj);
  apply_defaults(job);
  EXPECT_EQ(job.json()["spec"]["someFutureField"], obj["spec"]["someFutureField"]);
}

}  // namespace
}  // namespace mpijob
