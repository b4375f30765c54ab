// Golden objects for each MPI implementation and option set: the whole of every object, so that
// no field changes unseen. The goldens are korovod's own output; what they must agree with, field
// by field, is checked independently by semantics_test.cc against
// testdata/mpi-operator-v0.8-objects.json. Updating a golden: docs/testing.md, "Goldens".
#include <gtest/gtest.h>

#include "mpijob/builders.h"
#include "mpijob/defaults.h"
#include "mpijob/testing/fixtures.h"

namespace mpijob {
namespace {

using testing::pi_job;

// Every object the job owns, as one JSON document.
kube::Object all_objects(kube::Object obj, const BuildOptions& opts) {
  MPIJob job(std::move(obj));
  apply_defaults(job);
  testing::FixedKeyGenerator keys;
  std::vector<kube::Object> pods = {testing::worker("pi", 1, "Running"),
                                    testing::worker("pi", 0, "Running")};
  kube::Object out = {{"service", build_service(job)},
                      {"configMap", build_config_map(job, pods, opts)},
                      {"secret", build_ssh_secret(job, keys.generate())},
                      {"launcherJob", build_launcher_job(job, opts)},
                      {"workers", kube::Object::array()}};
  for (int i = 0; i < job.replicas(ReplicaType::Worker); ++i) {
    out["workers"].push_back(build_worker_pod(job, i, opts));
  }
  if (!opts.gang_scheduler.empty()) out["podGroup"] = build_pod_group(job, opts, nullptr);
  return out;
}

TEST(Builders, OpenMpiGolden) {
  kube::Object job = pi_job(2, "OpenMPI");
  job["spec"].erase("sshAuthMountPath");  // default /root/.ssh: secret volume mode 0600
  testing::expect_golden("openmpi", all_objects(job, {}));
}

TEST(Builders, IntelGolden) { testing::expect_golden("intel", all_objects(pi_job(2, "Intel"), {})); }

TEST(Builders, MpichGolden) { testing::expect_golden("mpich", all_objects(pi_job(2, "MPICH"), {})); }

TEST(Builders, RunLauncherAsWorkerGolden) {
  kube::Object job = pi_job(2, "OpenMPI");
  job["spec"]["runLauncherAsWorker"] = true;
  testing::expect_golden("launcher_as_worker", all_objects(job, {}));
}

// Custom sshAuthMountPath, hostNetwork, slots, cluster domain, a RoCE profile and Volcano.
TEST(Builders, OverridesGolden) {
  kube::Object job = pi_job(2, "OpenMPI");
  job["spec"]["sshAuthMountPath"] = "/home/trainer/.ssh";
  job["spec"]["slotsPerWorker"] = 8;
  job["metadata"]["annotations"] = {{"korovod.io/network-profile", "roce"},
                                    {"korovod.io/nccl-ib-hca", "mlx5_0,mlx5_1"}};
  for (const char* r : {"Launcher", "Worker"}) {
    job["spec"]["mpiReplicaSpecs"][r]["template"]["spec"]["hostNetwork"] = true;
  }
  // A user-set env var wins over the profile's.
  job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "NCCL_IB_GID_INDEX"}, {"value", "5"}}};
  BuildOptions opts;
  opts.cluster_domain = "example.org";
  opts.gang_scheduler = "volcano";
  opts.network.rdma_resource = "rdma/hca: 1";
  opts.network.socket_ifname = "eth0";
  testing::expect_golden("overrides", all_objects(job, opts));
}

// korovod.io/launch: agent: workers without a command run korovod's agent, no ssh volume,
// the launcher's rsh agent is korovod-agent's, and every pod is filled up for `restricted`.
TEST(Builders, AgentLaunchGolden) {
  kube::Object job = pi_job(2, "OpenMPI");
  job["metadata"]["annotations"] = {{"korovod.io/launch", "agent"}};
  auto& w = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0];
  w.erase("command");
  w.erase("args");
  testing::expect_golden("agent", all_objects(job, {}));
}

// What the template sets is kept: a container's runAsUser means no pod-level uid is chosen, a
// container's capabilities.drop and the pod's seccompProfile stay as written.
TEST(Builders, AgentModeKeepsTheTemplatesSecuritySettings) {
  kube::Object obj = pi_job(1, "OpenMPI");
  obj["metadata"]["annotations"] = {{"korovod.io/launch", "agent"}};
  auto& spec = obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"];
  spec["securityContext"] = {{"seccompProfile", {{"type", "Localhost"}, {"localhostProfile", "p.json"}}}};
  spec["containers"][0]["securityContext"] = {{"runAsUser", 2000}, {"capabilities", {{"drop", {"NET_RAW"}}}}};
  spec["initContainers"] = {{{"name", "init"}, {"image", "busybox"}}};
  MPIJob job(obj);
  apply_defaults(job);
  const kube::Object pod = build_worker_pod(job, 0, {});
  const kube::Object& sc = pod["spec"]["securityContext"];
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_FALSE(sc.contains("runAsUser")) << sc.dump();
  EXPECT_EQ(sc["seccompProfile"]["type"], "Localhost");
  const kube::Object& c = pod["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(c["runAsUser"], 2000);
  EXPECT_EQ(c["capabilities"]["drop"], kube::Object({"NET_RAW"}));
  EXPECT_EQ(c["allowPrivilegeEscalation"], false);
  const kube::Object& init = pod["spec"]["initContainers"][0]["securityContext"];
  EXPECT_EQ(init["allowPrivilegeEscalation"], false);
  EXPECT_EQ(init["capabilities"]["drop"], kube::Object({"ALL"}));
  // The worker's own command stays.
  EXPECT_EQ(pod["spec"]["containers"][0]["command"], job.pod_template(ReplicaType::Worker)["spec"]["containers"][0]["command"]);
}

TEST(Builders, SshLaunchIsTheDefaultAndUnchanged) {
  kube::Object with = pi_job(2, "OpenMPI");
  with["metadata"]["annotations"] = {{"korovod.io/launch", "ssh"}};
  EXPECT_EQ(all_objects(with, {}), all_objects(pi_job(2, "OpenMPI"), {}));
}

TEST(Builders, TheLauncherJobHasNoTtlOfItsOwn) {
  MPIJob job(pi_job(2, "OpenMPI"));
  apply_defaults(job);
  ASSERT_TRUE(job.ttl_seconds_after_finished().has_value());  // the fixture sets 60 s
  const kube::Object launcher = build_launcher_job(job, {});
  EXPECT_FALSE(launcher["spec"].contains("ttlSecondsAfterFinished")) << launcher["spec"].dump();
}

TEST(Builders, HostfileFormats) {
  MPIJob job(pi_job(2, "Intel"));
  apply_defaults(job);
  EXPECT_EQ(hostfile(job, {}), "pi-worker-0.pi.default.svc:1\npi-worker-1.pi.default.svc:1\n");
  MPIJob ompi(pi_job(1, "OpenMPI"));
  apply_defaults(ompi);
  BuildOptions opts;
  opts.cluster_domain = "c.local";
  EXPECT_EQ(hostfile(ompi, opts),
            "pi-worker-0.pi.default.svc.c.local slots=1\n");
}

TEST(Builders, DiscoverHostsListsRunningWorkersSortedByNameWithSlots) {
  kube::Object obj = pi_job(2);
  obj["metadata"]["name"] = "test-job";
  MPIJob job(obj);
  apply_defaults(job);
  std::vector<kube::Object> pods = {testing::worker("test-job", 1, "Running"),
                                    testing::worker("test-job", 2, "Pending"),
                                    testing::worker("test-job", 0, "Running")};
  EXPECT_EQ(discover_hosts(job, pods, {}),
            "#!/bin/sh\necho test-job-worker-0.test-job.default.svc:1\n"
            "echo test-job-worker-1.test-job.default.svc:1\n");
}

TEST(Builders, WorkerWithoutCommandRunsSshd) {
  kube::Object obj = pi_job(1);
  auto& c = obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0];
  c.erase("command");
  c.erase("args");
  MPIJob job(obj);
  apply_defaults(job);
  auto pod = build_worker_pod(job, 0, {});
  EXPECT_EQ(pod["spec"]["containers"][0]["command"], kube::Object({"/usr/sbin/sshd", "-De"}));
}

TEST(Builders, SchedulerPluginsPodGroupSumsRequestsAndLabelsPods) {
  kube::Object obj = pi_job(3);
  MPIJob job(obj);
  apply_defaults(job);
  BuildOptions opts;
  opts.gang_scheduler = "scheduler-plugins-scheduler";
  auto pg = build_pod_group(job, opts, nullptr);
  EXPECT_EQ(pg["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(pg["spec"]["minMember"], 4);
  EXPECT_EQ(pg["spec"]["scheduleTimeoutSeconds"], 0);
  EXPECT_EQ(pg["spec"]["minResources"], kube::Object({{"cpu", "4"}, {"memory", "4Gi"}}));
  auto pod = build_worker_pod(job, 0, opts);
  EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "pi");
}

TEST(Builders, PodGroupTruncatesLowerPriorityReplicasToMinAvailable) {
  kube::Object obj = pi_job(3);
  obj["spec"]["runPolicy"]["schedulingPolicy"] = {{"minAvailable", 2}, {"queue", "q1"}};
  obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = "high";
  MPIJob job(obj);
  apply_defaults(job);
  auto lookup = [](const std::string& n) -> std::optional<int32_t> {
    return n == "high" ? std::optional<int32_t>(100) : std::nullopt;
  };
  BuildOptions opts;
  opts.gang_scheduler = "volcano";
  auto pg = build_pod_group(job, opts, lookup);
  EXPECT_EQ(pg["spec"]["minMember"], 2);
  EXPECT_EQ(pg["spec"]["queue"], "q1");
  EXPECT_EQ(pg["spec"]["priorityClassName"], "high");
  // launcher 1 + workers cut to minMember-1 = 1
  EXPECT_EQ(pg["spec"]["minResources"], kube::Object({{"cpu", "2"}, {"memory", "2Gi"}}));
}

TEST(Builders, TcpProfileForIntelSetsNoOpenMpiVars) {
  kube::Object obj = pi_job(1, "Intel");
  obj["metadata"]["annotations"] = {{"korovod.io/network-profile", "tcp"}};
  MPIJob job(obj);
  apply_defaults(job);
  auto pod = build_worker_pod(job, 0, {});
  const auto& env = pod["spec"]["containers"][0]["env"];
  EXPECT_EQ(env.back(), kube::Object({{"name", "NCCL_IB_DISABLE"}, {"value", "1"}}));
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("securityContext") &&
               pod["spec"]["containers"][0]["securityContext"].contains("capabilities"));
}

}  // namespace
}  // namespace mpijob
