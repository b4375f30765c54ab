// The `docker run` command line built from pod specs (docker_run.h): Kubernetes' command/args
// rules over the image's ENTRYPOINT/CMD, env through the env file, mounts as a kubelet makes
// them, the pod's DNS names as aliases, user and groups, limits and labels.
#include <gtest/gtest.h>

#include <algorithm>

#include "local/docker/docker_run.h"
#include "mpijob/builders.h"
#include "mpijob/defaults.h"

namespace local {
namespace {

DockerOptions options() {
  DockerOptions o;
  o.docker = "/usr/bin/docker";
  o.run_id = "r1";
  o.network = "korovod-r1";
  return o;
}

kube::Object pod(kube::Object container, kube::Object spec_extra = kube::Object::object()) {
  kube::Object spec = {{"containers", kube::Object::array({container})}};
  spec.update(spec_extra);
  return {{"metadata", {{"name", "p"}, {"namespace", "ns1"}}}, {"spec", spec}};
}

std::vector<std::string> run_argv(const kube::Object& p, LaunchSpec launch = {},
                                  DockerOptions o = options()) {
  if (launch.hostname.empty()) launch.hostname = "p";
  return docker_run_args(p, p["spec"]["containers"][0], launch, o, "korovod-r1-p-c-1", "/w/c.env").argv;
}

// The argv after the last option: IMAGE and what follows it.
std::vector<std::string> from_image(const std::vector<std::string>& argv, const std::string& image) {
  auto it = std::find(argv.begin(), argv.end(), image);
  return {it, argv.end()};
}

// Values of every occurrence of `flag`.
std::vector<std::string> values(const std::vector<std::string>& argv, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  }
  return out;
}

TEST(DockerRunArgs, CommandReplacesTheEntrypointAndArgsFollowIt) {
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "img:1"},
                                  {"command", {"/usr/sbin/sshd", "-De"}}, {"args", {"-p", "22"}}}));
  EXPECT_EQ(values(argv, "--entrypoint"), (std::vector<std::string>{"/usr/sbin/sshd"}));
  EXPECT_EQ(from_image(argv, "img:1"), (std::vector<std::string>{"img:1", "-De", "-p", "22"}));
}

TEST(DockerRunArgs, ArgsAloneReplaceCmdAndKeepTheEntrypoint) {
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "img:1"}, {"args", {"mpirun", "-n", "2", "pi"}}}));
  EXPECT_TRUE(values(argv, "--entrypoint").empty());
  EXPECT_EQ(from_image(argv, "img:1"), (std::vector<std::string>{"img:1", "mpirun", "-n", "2", "pi"}));
}

TEST(DockerRunArgs, NeitherCommandNorArgsRunsTheImagesOwn) {
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "img:1"}}));
  EXPECT_TRUE(values(argv, "--entrypoint").empty());
  EXPECT_EQ(argv.back(), "img:1");
}

TEST(DockerRunArgs, VariableReferencesInCommandAndArgsExpandFromTheEnv) {
  LaunchSpec launch;
  launch.env = {{"EPOCHS", "3"}};
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "i"}, {"command", {"train"}},
                                  {"args", {"--epochs=$(EPOCHS)", "$$(EPOCHS)"}}}),
                             launch);
  EXPECT_EQ(from_image(argv, "i"), (std::vector<std::string>{"i", "--epochs=3", "$(EPOCHS)"}));
}

TEST(DockerRunArgs, StartsAttachedRemovedNamedAndLabelledOnTheJobsNetwork) {
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "i"}}));
  EXPECT_EQ((std::vector<std::string>(argv.begin(), argv.begin() + 5)),
            (std::vector<std::string>{"/usr/bin/docker", "run", "--rm", "--name", "korovod-r1-p-c-1"}));
  EXPECT_EQ(values(argv, "--label"),
            (std::vector<std::string>{"korovod.run=r1", "korovod.namespace=ns1", "korovod.pod=p",
                                      "korovod.container=c"}));
  EXPECT_EQ(values(argv, "--network"), (std::vector<std::string>{"korovod-r1"}));
  EXPECT_EQ(values(argv, "--hostname"), (std::vector<std::string>{"p"}));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "-d"), 0) << "attached: the client is the process";
}

TEST(DockerRunArgs, EnvGoesToTheEnvFileAndNothingOfTheHosts) {
  LaunchSpec launch;
  launch.hostname = "p";
  launch.env = {{"A", "1"}, {"B", "x y=z "}, {"PEM", "line1\nline2"}};
  const kube::Object p = pod({{"name", "c"}, {"image", "i"}});
  const auto args = docker_run_args(p, p["spec"]["containers"][0], launch, options(), "n", "/w/c.env");
  EXPECT_EQ(args.env_file, "A=1\nB=x y=z \n");
  EXPECT_EQ(values(args.argv, "--env-file"), (std::vector<std::string>{"/w/c.env"}));
  EXPECT_EQ(values(args.argv, "-e"), (std::vector<std::string>{"PEM=line1\nline2"}));
}

TEST(DockerRunArgs, MountsBindAtTheirPathsReadOnlyAsAKubeletMountsThem) {
  const kube::Object container = {
      {"name", "c"}, {"image", "i"},
      {"volumeMounts", {{{"name", "ssh"}, {"mountPath", "/root/.ssh"}},
                        {{"name", "scratch"}, {"mountPath", "/scratch"}},
                        {{"name", "data"}, {"mountPath", "/data"}, {"readOnly", true}},
                        {{"name", "cfg"}, {"mountPath", "/etc/app.conf"}, {"subPath", "app.conf"}}}}};
  const kube::Object volumes = {{"volumes", {{{"name", "ssh"}, {"secret", {{"secretName", "s"}}}},
                                             {{"name", "scratch"}, {"emptyDir", kube::Object::object()}},
                                             {{"name", "data"}, {"hostPath", {{"path", "/srv"}}}},
                                             {{"name", "cfg"}, {"configMap", {{"name", "c"}}}}}}};
  LaunchSpec launch;
  launch.mounts = {{"/w/volumes/ssh", "/root/.ssh", false},
                   {"/w/volumes/scratch", "/scratch", false},
                   {"/srv", "/data", true},
                   {"/w/volumes/cfg/app.conf", "/etc/app.conf", false}};
  EXPECT_EQ(values(run_argv(pod(container, volumes), launch), "--mount"),
            (std::vector<std::string>{
                "type=bind,source=/w/volumes/ssh,target=/root/.ssh,readonly",
                "type=bind,source=/w/volumes/scratch,target=/scratch",
                "type=bind,source=/srv,target=/data,readonly",
                "type=bind,source=/w/volumes/cfg/app.conf,target=/etc/app.conf,readonly"}));
}

TEST(DockerRunArgs, AMountPathWithACommaIsQuoted) {
  LaunchSpec launch;
  launch.mounts = {{"/w/a,b", "/x", false}};
  EXPECT_EQ(values(run_argv(pod({{"name", "c"}, {"image", "i"}}), launch), "--mount"),
            (std::vector<std::string>{"type=bind,\"source=/w/a,b\",target=/x"}));
}

// The operator's own worker and launcher: the hostfile's names resolve on the job's network.
TEST(DockerRunArgs, TheOperatorsPodsAreReachableByTheirHostfileNames) {
  kube::Object obj = {
      {"apiVersion", "kubeflow.org/v2beta1"}, {"kind", "MPIJob"},
      {"metadata", {{"name", "pi"}, {"namespace", "default"}, {"uid", "u"}}},
      {"spec", {{"mpiReplicaSpecs",
                 {{"Launcher", {{"replicas", 1}, {"template", {{"spec", {{"containers", {{{"name", "l"}, {"image", "i"}}}}}}}}}},
                  {"Worker", {{"replicas", 2}, {"template", {{"spec", {{"containers", {{{"name", "w"}, {"image", "i"}}}}}}}}}}}}}}};
  mpijob::MPIJob job(obj);
  mpijob::apply_defaults(job);
  kube::Object worker = mpijob::build_worker_pod(job, 1, {});
  EXPECT_EQ(pod_dns_names(worker, "cluster.local"),
            (std::vector<std::string>{"pi-worker-1", "pi-worker-1.pi.default.svc",
                                      "pi-worker-1.pi.default.svc.cluster.local"}));
  EXPECT_NE(mpijob::hostfile(job, {}).find("pi-worker-1.pi.default.svc"), std::string::npos);
  const auto argv = docker_run_args(worker, worker["spec"]["containers"][0], {}, options(), "n", "f").argv;
  EXPECT_EQ(values(argv, "--entrypoint"), (std::vector<std::string>{"/usr/sbin/sshd"}));
  EXPECT_EQ(from_image(argv, "i"), (std::vector<std::string>{"i", "-De"}));
  EXPECT_EQ(values(argv, "--dns-search"), (std::vector<std::string>{"pi.default.svc.cluster.local"}));

  kube::Object launcher = mpijob::build_launcher_pod_template(job, {});
  launcher["metadata"]["name"] = "pi-launcher-x7k2p";
  launcher["metadata"]["namespace"] = "default";
  EXPECT_EQ(pod_dns_names(launcher, "cluster.local"),
            (std::vector<std::string>{"pi-launcher-x7k2p", "pi-launcher", "pi-launcher.pi.default.svc",
                                      "pi-launcher.pi.default.svc.cluster.local"}));
}

TEST(DockerRunArgs, SecurityContextBecomesUserAndGroupsTheContainersOverThePods) {
  const kube::Object p = pod({{"name", "c"}, {"image", "i"}, {"securityContext", {{"runAsUser", 1000}}}},
                             {{"securityContext", {{"runAsUser", 2000}, {"runAsGroup", 3000},
                                                   {"fsGroup", 4000}, {"supplementalGroups", {5000}}}}});
  const auto argv = run_argv(p);
  EXPECT_EQ(values(argv, "--user"), (std::vector<std::string>{"1000:3000"}));
  EXPECT_EQ(values(argv, "--group-add"), (std::vector<std::string>{"4000", "5000"}));
  EXPECT_FALSE(runs_as_root(p, p["spec"]["containers"][0]));
  const kube::Object root = pod({{"name", "c"}, {"image", "i"}});
  EXPECT_TRUE(values(run_argv(root), "--user").empty());
  EXPECT_TRUE(runs_as_root(root, root["spec"]["containers"][0]));
}

TEST(DockerRunArgs, WorkingDirAndPullPolicy) {
  LaunchSpec launch;
  launch.working_dir = "/home/mpiuser";
  const auto argv = run_argv(pod({{"name", "c"}, {"image", "i"}, {"imagePullPolicy", "Never"}}), launch);
  EXPECT_EQ(values(argv, "-w"), (std::vector<std::string>{"/home/mpiuser"}));
  EXPECT_EQ(values(argv, "--pull"), (std::vector<std::string>{"never"}));
}

TEST(DockerRunArgs, LimitsBecomeCpusAndMemoryWhenTheDaemonCanEnforceThem) {
  const kube::Object p = pod({{"name", "c"}, {"image", "i"},
                              {"resources", {{"limits", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                                             {"requests", {{"cpu", "2"}}}}}});
  auto argv = run_argv(p);
  EXPECT_EQ(values(argv, "--cpus"), (std::vector<std::string>{"0.1"}));
  EXPECT_EQ(values(argv, "--memory"), (std::vector<std::string>{"134217728"}));
  DockerOptions weak = options();
  weak.cpu_limits = weak.memory_limits = false;
  argv = run_argv(p, {}, weak);
  EXPECT_TRUE(values(argv, "--cpus").empty());
  EXPECT_TRUE(values(argv, "--memory").empty());
  EXPECT_EQ(docker_cpus("1"), "1");
  EXPECT_EQ(docker_cpus("1.25"), "1.25");
  EXPECT_EQ(docker_cpus(2), "2");
  EXPECT_EQ(docker_memory("2Gi"), "2147483648");
  EXPECT_EQ(docker_memory("1G"), "1000000000");
}

TEST(DockerRunArgs, AContainerWithoutAnImageIsRefused) {
  EXPECT_THROW(run_argv(pod({{"name", "c"}})), std::runtime_error);
}

TEST(DockerRunArgs, EveryStartIsANewlyNamedContainer) {
  EXPECT_EQ(docker_container_name(options(), "pi-worker-0", "worker", 2), "korovod-r1-pi-worker-0-worker-2");
}

}  // namespace
}  // namespace local
