#include "cli/submit.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

#include "mpijob/profile.h"
#include "mpijob/quantity.h"
#include "mpijob/types.h"

namespace cli {
namespace {

using kube::Object;

void check_request(const SubmitRequest& r) {
  static const std::regex kName("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  if (!std::regex_match(r.name, kName) || r.name.size() > 63) {
    throw std::invalid_argument("NAME '" + r.name +
                                "': use lower case letters, digits and '-', starting and ending with a "
                                "letter or digit, at most 63 characters (a DNS label, as pod names need)");
  }
  if (r.workers < 1) throw std::invalid_argument("--workers: at least 1");
  if (r.image.empty()) throw std::invalid_argument("--image: required (the worker image, e.g. korovod-worker-cpu:0.1.0)");
  if (r.gpus_per_worker < 0) throw std::invalid_argument("--gpus-per-worker: 0 or more");
  if (r.processes_per_worker && *r.processes_per_worker < 1) throw std::invalid_argument("--processes-per-worker: at least 1");
  if (r.command.empty()) throw std::invalid_argument("no COMMAND: give the training command after --");
  for (const auto& [flag, value] : {std::pair{"--cpu", r.cpu}, std::pair{"--memory", r.memory}}) {
    if (value.empty()) continue;
    try {
      if (mpijob::Quantity::parse(Object(value)).milli() <= 0) throw std::invalid_argument("not positive");
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(std::string(flag) + " '" + value + "': not a Kubernetes quantity (e.g. 2, 500m, 4Gi)");
    }
  }
  if (r.elastic && !(r.elastic->min_workers <= r.workers && r.workers <= r.elastic->max_workers)) {
    throw std::invalid_argument("--elastic " + std::to_string(r.elastic->min_workers) + ":" +
                                std::to_string(r.elastic->max_workers) + ": --workers " + std::to_string(r.workers) +
                                " must lie within it");
  }
}

bool starts_ranks_itself(const std::string& program) {
  const std::string base = program.substr(program.rfind('/') + 1);
  return base == "mpirun" || base == "mpiexec" || base == "korovodrun" || base == "horovodrun";
}

std::vector<std::string> launcher_args(const SubmitRequest& r) {
  if (starts_ranks_itself(r.command.front())) return r.command;
  const int slots = ranks_per_worker(r);
  std::vector<std::string> args;
  if (r.elastic) {
    args = {"korovodrun", "-np", std::to_string(r.workers * slots),
            "--min-np", std::to_string(r.elastic->min_workers * slots),
            "--max-np", std::to_string(r.elastic->max_workers * slots),
            "--host-discovery-script", std::string(mpijob::kConfigMountPath) + "/" + mpijob::kDiscoverHostsName};
  } else if (r.mpi == mpijob::MpiImplementation::OpenMPI) {
    // Ranks are not pinned to cores the container may not own; each line says its rank.
    args = {"mpirun", "-n", std::to_string(r.workers * slots), "--bind-to", "none", "--tag-output"};
  } else {
    args = {"mpirun", "-n", std::to_string(r.workers * slots), "-prepend-rank"};  // Intel MPI, MPICH
  }
  args.insert(args.end(), r.command.begin(), r.command.end());
  return args;
}

Object worker_resources(const SubmitRequest& r) {
  Object requests = Object::object(), limits = Object::object();
  if (!r.cpu.empty()) requests["cpu"] = limits["cpu"] = r.cpu;
  if (!r.memory.empty()) requests["memory"] = limits["memory"] = r.memory;
  if (r.gpus_per_worker > 0) limits["nvidia.com/gpu"] = std::to_string(r.gpus_per_worker);
  Object resources = Object::object();
  if (!requests.empty()) resources["requests"] = requests;
  if (!limits.empty()) resources["limits"] = limits;
  return resources;
}

Object replica(int replicas, Object container) {
  return {{"replicas", replicas}, {"template", {{"spec", {{"containers", Object::array({std::move(container)})}}}}}};
}

const char* mpi_name(mpijob::MpiImplementation m) {
  switch (m) {
    case mpijob::MpiImplementation::Intel: return "Intel";
    case mpijob::MpiImplementation::MPICH: return "MPICH";
    case mpijob::MpiImplementation::OpenMPI: break;
  }
  return "OpenMPI";
}

}  // namespace

ElasticRange parse_elastic(const std::string& text) {
  static const std::regex kRange("([0-9]{1,6}):([0-9]{1,6})");
  std::smatch m;
  if (std::regex_match(text, m, kRange)) {
    ElasticRange e{std::stoi(m[1]), std::stoi(m[2])};
    if (e.min_workers >= 1 && e.min_workers <= e.max_workers) return e;
  }
  throw std::invalid_argument("--elastic '" + text + "': use MIN:MAX workers, 1 <= MIN <= MAX (e.g. 2:8)");
}

mpijob::MpiImplementation parse_mpi(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "openmpi") return mpijob::MpiImplementation::OpenMPI;
  if (lower == "intel") return mpijob::MpiImplementation::Intel;
  if (lower == "mpich") return mpijob::MpiImplementation::MPICH;
  throw std::invalid_argument("--mpi '" + text + "': one of openmpi, intel, mpich");
}

int ranks_per_worker(const SubmitRequest& r) {
  if (r.processes_per_worker) return *r.processes_per_worker;
  return r.gpus_per_worker > 0 ? r.gpus_per_worker : 1;
}

Object build_mpijob(const SubmitRequest& r) {
  check_request(r);
  Object metadata = {{"name", r.name}};
  if (!r.ns.empty()) metadata["namespace"] = r.ns;
  if (!r.profile.empty()) metadata["annotations"] = {{mpijob::kAnnotationProfile, r.profile}};

  Object launcher = {{"name", "launcher"}, {"image", r.image}, {"args", launcher_args(r)}};
  Object worker = {{"name", "worker"}, {"image", r.image}};
  if (Object res = worker_resources(r); !res.empty()) worker["resources"] = res;

  Object spec = {{"slotsPerWorker", ranks_per_worker(r)},
                 {"runPolicy", {{"cleanPodPolicy", "Running"}}},
                 {"mpiImplementation", mpi_name(r.mpi)},
                 {"mpiReplicaSpecs", {{"Launcher", replica(1, launcher)}, {"Worker", replica(r.workers, worker)}}}};
  return {{"apiVersion", mpijob::kApiVersion}, {"kind", mpijob::kKind}, {"metadata", metadata}, {"spec", spec}};
}

}  // namespace cli
