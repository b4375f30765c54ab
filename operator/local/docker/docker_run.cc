#include "local/docker/docker_run.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "kube/object_meta.h"
#include "mpijob/quantity.h"

namespace local {
namespace {

std::optional<int64_t> security_id(const kube::Object& pod, const kube::Object& container,
                                   const char* key) {
  for (const auto* sc : {&field(container, "securityContext"),
                         &field(field(pod, "spec"), "securityContext")}) {
    if (sc->contains(key) && (*sc)[key].is_number_integer()) return (*sc)[key].get<int64_t>();
  }
  return std::nullopt;
}

// The volume a volumeMount at mount_path names, or an empty object.
const kube::Object& volume_at(const kube::Object& pod, const kube::Object& container,
                              const std::string& mount_path) {
  for (const auto& vm : field(container, "volumeMounts")) {
    if (vm.value("mountPath", "") != mount_path) continue;
    for (const auto& v : field(field(pod, "spec"), "volumes")) {
      if (v.value("name", "") == vm.value("name", "")) return v;
    }
  }
  return field(pod, "no such key");
}

// A kubelet mounts these read-only whatever the volumeMount says.
bool kubelet_read_only(const kube::Object& volume) {
  for (const char* type : {"secret", "configMap", "downwardAPI", "projected"}) {
    if (volume.contains(type)) return true;
  }
  return false;
}

// One field of --mount's CSV: quoted when it holds a comma or a quote.
std::string csv_field(const std::string& f) {
  if (f.find_first_of(",\"") == std::string::npos) return f;
  std::string out = "\"";
  for (char c : f) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string milli_decimal(__int128 milli) {
  std::string out = std::to_string(static_cast<int64_t>(milli / 1000));
  int frac = static_cast<int>(milli % 1000);
  if (frac == 0) return out;
  std::string digits = std::to_string(1000 + frac).substr(1);
  while (digits.back() == '0') digits.pop_back();
  return out + "." + digits;
}

void add_command(const kube::Object& container, const EnvList& env, DockerRunArgs& out,
                 const std::string& image) {
  std::vector<std::string> command, args;
  for (const auto& a : field(container, "command")) command.push_back(expand_references(a, env));
  for (const auto& a : field(container, "args")) args.push_back(expand_references(a, env));
  if (!command.empty()) out.argv.insert(out.argv.end(), {"--entrypoint", command[0]});
  out.argv.push_back(image);
  if (!command.empty()) out.argv.insert(out.argv.end(), command.begin() + 1, command.end());
  out.argv.insert(out.argv.end(), args.begin(), args.end());
}

void add_limits(const kube::Object& container, const DockerOptions& o, DockerRunArgs& out) {
  const auto& limits = field(field(container, "resources"), "limits");
  if (o.cpu_limits && limits.contains("cpu")) {
    out.argv.insert(out.argv.end(), {"--cpus", docker_cpus(limits["cpu"])});
  }
  if (o.memory_limits && limits.contains("memory")) {
    out.argv.insert(out.argv.end(), {"--memory", docker_memory(limits["memory"])});
  }
}

void add_identity(const kube::Object& pod, const kube::Object& container, DockerRunArgs& out) {
  if (const std::string user = docker_user(pod, container); !user.empty()) {
    out.argv.insert(out.argv.end(), {"--user", user});
  }
  const auto& psc = field(field(pod, "spec"), "securityContext");
  if (psc.contains("fsGroup")) out.argv.insert(out.argv.end(), {"--group-add", psc["fsGroup"].dump()});
  for (const auto& g : field(psc, "supplementalGroups")) {
    out.argv.insert(out.argv.end(), {"--group-add", g.dump()});
  }
}

}  // namespace

std::string docker_container_name(const DockerOptions& o, const std::string& pod,
                                  const std::string& container, int serial) {
  return "korovod-" + o.run_id + "-" + pod + "-" + container + "-" + std::to_string(serial);
}

std::vector<std::string> pod_dns_names(const kube::Object& pod, const std::string& cluster_domain) {
  const std::string name = kube::name_of(pod), ns = kube::namespace_of(pod);
  const auto& spec = field(pod, "spec");
  const std::string hostname = spec.value("hostname", name);
  const std::string subdomain = spec.value("subdomain", "");
  std::vector<std::string> names = {name};
  if (hostname != name) names.push_back(hostname);
  if (!subdomain.empty()) {
    const std::string svc = hostname + "." + subdomain + "." + (ns.empty() ? "default" : ns) + ".svc";
    names.push_back(svc);
    if (!cluster_domain.empty()) names.push_back(svc + "." + cluster_domain);
  }
  return names;
}

std::string docker_user(const kube::Object& pod, const kube::Object& container) {
  const auto uid = security_id(pod, container, "runAsUser");
  if (!uid) return "";
  const auto gid = security_id(pod, container, "runAsGroup");
  return std::to_string(*uid) + (gid ? ":" + std::to_string(*gid) : "");
}

bool runs_as_root(const kube::Object& pod, const kube::Object& container) {
  return security_id(pod, container, "runAsUser").value_or(0) == 0;
}

std::string docker_cpus(const kube::Object& quantity) {
  return milli_decimal(mpijob::Quantity::parse(quantity).milli());
}

std::string docker_memory(const kube::Object& quantity) {
  return std::to_string(static_cast<int64_t>(mpijob::Quantity::parse(quantity).milli() / 1000));
}

DockerRunArgs docker_run_args(const kube::Object& pod, const kube::Object& container,
                              const LaunchSpec& launch, const DockerOptions& o,
                              const std::string& name, const std::string& env_file_path) {
  DockerRunArgs out;
  const std::string ns = kube::namespace_of(pod), pod_name = kube::name_of(pod);
  out.argv = {o.docker, "run", "--rm", "--name", name,
              "--label", std::string(kRunLabel) + "=" + o.run_id,
              "--label", "korovod.namespace=" + ns,
              "--label", "korovod.pod=" + pod_name,
              "--label", "korovod.container=" + container.value("name", ""),
              "--network", o.network};
  for (const auto& alias : pod_dns_names(pod, o.cluster_domain)) {
    out.argv.insert(out.argv.end(), {"--network-alias", alias});
  }
  out.argv.insert(out.argv.end(), {"--hostname", launch.hostname});
  for (const auto& s : field(field(field(pod, "spec"), "dnsConfig"), "searches")) {
    out.argv.insert(out.argv.end(), {"--dns-search", s.get<std::string>()});
  }
  add_identity(pod, container, out);
  if (!launch.working_dir.empty()) out.argv.insert(out.argv.end(), {"-w", launch.working_dir});
  add_limits(container, o, out);
  const std::string pull = container.value("imagePullPolicy", "");
  if (pull == "Always") out.argv.insert(out.argv.end(), {"--pull", "always"});
  if (pull == "Never") out.argv.insert(out.argv.end(), {"--pull", "never"});
  if (pull == "IfNotPresent") out.argv.insert(out.argv.end(), {"--pull", "missing"});
  out.argv.insert(out.argv.end(), {"--env-file", env_file_path});
  for (const auto& [k, v] : launch.env) {
    if (v.find('\n') == std::string::npos) {
      out.env_file += k + "=" + v + "\n";
    } else {
      out.argv.insert(out.argv.end(), {"-e", k + "=" + v});
    }
  }
  for (const auto& m : launch.mounts) {
    std::string spec = "type=bind," + csv_field("source=" + m.host_path.string()) + "," +
                       csv_field("target=" + m.mount_path);
    if (m.read_only || kubelet_read_only(volume_at(pod, container, m.mount_path))) spec += ",readonly";
    out.argv.insert(out.argv.end(), {"--mount", spec});
  }
  const std::string image = container.value("image", "");
  if (image.empty()) {
    throw std::runtime_error("container \"" + container.value("name", "") + "\" has no image");
  }
  add_command(container, launch.env, out, image);
  return out;
}

}  // namespace local
