#include "local/sandbox/volumes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>

namespace local {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Unchanged content is left alone; new content replaces the file by rename, so a reader (a
// discovery script run every second while the operator rewrites it) sees the old or the new
// file, never a half-written one, as the kubelet's atomic writer guarantees.
void write_file(const fs::path& path, const std::string& content, int mode) {
  if (read_file(path) == content) return;
  fs::create_directories(path.parent_path());
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".korovod-tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << content;
  }
  fs::permissions(tmp, fs::perms(mode & 07777), fs::perm_options::replace);
  fs::rename(tmp, path);
}

// A projected ConfigMap or Secret: every key, or only the listed items.
void project(const kube::Object& source, const kube::Object& data, const fs::path& dir,
             const std::string& what) {
  const int default_mode = source.value("defaultMode", 0644);
  const bool optional = source.value("optional", false);
  fs::create_directories(dir);
  if (data.empty() && !optional) throw std::runtime_error(what + " not found");
  if (!source.contains("items")) {
    for (const auto& [k, v] : data.items()) write_file(dir / k, v.get<std::string>(), default_mode);
    return;
  }
  for (const auto& item : source["items"]) {
    const std::string key = item.value("key", "");
    if (!data.contains(key)) {
      if (optional) continue;
      throw std::runtime_error(what + " has no key \"" + key + "\"");
    }
    write_file(dir / item.value("path", key), data[key].get<std::string>(),
               item.value("mode", default_mode));
  }
}

// downwardAPI items: fieldRef paths of the pod (resourceFieldRef is written empty).
void project_downward(const kube::Object& pod, const kube::Object& source, const fs::path& dir) {
  const int default_mode = source.value("defaultMode", 0644);
  fs::create_directories(dir);
  for (const auto& item : field(source, "items")) {
    std::string value;
    if (item.contains("fieldRef")) value = pod_field(pod, item["fieldRef"].value("fieldPath", ""));
    write_file(dir / item.value("path", ""), value, item.value("mode", default_mode));
  }
}

// projected: configMap, secret and downwardAPI sources into one directory. A
// serviceAccountToken source is written as an empty file: local mode requests no tokens.
void project_sources(const kube::Object& pod, const kube::Object& projected,
                     const EnvSources& sources, const fs::path& dir) {
  fs::create_directories(dir);
  kube::Object defaults = kube::Object::object();
  if (projected.contains("defaultMode")) defaults["defaultMode"] = projected["defaultMode"];
  for (const auto& src : field(projected, "sources")) {
    if (src.contains("configMap")) {
      kube::Object cm = src["configMap"];
      cm.update(defaults, true);
      const std::string name = cm.value("name", "");
      project(cm, sources.config_map_data(name), dir, "configmap \"" + name + "\"");
    } else if (src.contains("secret")) {
      kube::Object sec = src["secret"];
      sec.update(defaults, true);
      const std::string name = sec.value("name", "");
      project(sec, sources.secret_data(name), dir, "secret \"" + name + "\"");
    } else if (src.contains("downwardAPI")) {
      project_downward(pod, src["downwardAPI"], dir);
    } else if (src.contains("serviceAccountToken")) {
      write_file(dir / src["serviceAccountToken"].value("path", "token"), "",
                 projected.value("defaultMode", 0644));
    }
  }
}

// Writes a configMap, secret or projected volume from its sources; false for any other kind.
// Shared by the first setup and the refresh, so both read the sources the same way.
bool project_from_sources(const kube::Object& pod, const kube::Object& vol, const EnvSources& sources,
                          const fs::path& dir) {
  if (vol.contains("configMap")) {
    const std::string cm = vol["configMap"].value("name", "");
    project(vol["configMap"], sources.config_map_data(cm), dir, "configmap \"" + cm + "\"");
  } else if (vol.contains("secret")) {
    const std::string s = vol["secret"].value("secretName", "");
    project(vol["secret"], sources.secret_data(s), dir, "secret \"" + s + "\"");
  } else if (vol.contains("projected")) {
    project_sources(pod, vol["projected"], sources, dir);
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::pair<std::string, fs::path>> materialize_volumes(const kube::Object& pod,
                                                                  const EnvSources& sources,
                                                                  const fs::path& pod_dir) {
  std::vector<std::pair<std::string, fs::path>> out;
  const auto& spec = field(pod, "spec");
  for (const auto& vol : field(spec, "volumes")) {
    const std::string name = vol.value("name", "");
    fs::path dir = pod_dir / "volumes" / name;
    if (project_from_sources(pod, vol, sources, dir)) {
      // configMap, secret or projected: written
    } else if (vol.contains("downwardAPI")) {
      project_downward(pod, vol["downwardAPI"], dir);
    } else if (vol.contains("emptyDir")) {
      fs::create_directories(dir);
    } else if (vol.contains("hostPath")) {
      dir = vol["hostPath"].value("path", "");
    } else {
      throw std::runtime_error("volume \"" + name + "\": only configMap, secret, projected, "
                               "downwardAPI, emptyDir and hostPath volumes run locally");
    }
    out.emplace_back(name, dir);
  }
  return out;
}

void refresh_volumes(const kube::Object& pod, const EnvSources& sources, const fs::path& pod_dir) {
  for (const auto& vol : field(field(pod, "spec"), "volumes")) {
    const fs::path dir = pod_dir / "volumes" / vol.value("name", "");
    try {
      project_from_sources(pod, vol, sources, dir);
    } catch (const std::runtime_error&) {
      // Gone or lost a key (the job finished and its ConfigMap went): keep what is there, as
      // the kubelet keeps a volume's last content.
    }
  }
}

namespace {

// chgrp gid and add `bits` to the mode of path (not following a symlink: the kubelet's
// ..data links of projected volumes are not ours; ours are plain files).
void own_by_group(const fs::path& path, gid_t gid, fs::perms bits) {
  if (lchown(path.c_str(), static_cast<uid_t>(-1), gid) != 0) {
    throw std::runtime_error("cannot give " + path.string() + " to fsGroup " + std::to_string(gid) +
                             ": " + std::strerror(errno));
  }
  if (!fs::is_symlink(path)) fs::permissions(path, bits, fs::perm_options::add);
}

}  // namespace

void apply_volume_ownership(const kube::Object& pod, const fs::path& pod_dir, bool refresh) {
  const auto& spec = field(pod, "spec");
  const auto& sc = field(spec, "securityContext");
  const bool has_fs_group = sc.contains("fsGroup");
  const gid_t fs_group = has_fs_group ? sc["fsGroup"].get<gid_t>() : 0;
  for (const auto& vol : field(spec, "volumes")) {
    const fs::path dir = pod_dir / "volumes" / vol.value("name", "");
    const bool empty_dir = vol.contains("emptyDir");
    if (refresh && empty_dir) continue;  // the container's own files: set once, at the start
    if (empty_dir) fs::permissions(dir, fs::perms::all, fs::perm_options::add);
    const bool owned = empty_dir || vol.contains("secret") || vol.contains("configMap") ||
                       vol.contains("projected") || vol.contains("downwardAPI");
    if (!has_fs_group || !owned || !fs::is_directory(dir)) continue;
    const auto dir_bits = fs::perms::group_read | fs::perms::group_exec |
                          (empty_dir ? fs::perms::group_write | fs::perms::set_gid : fs::perms::none);
    const auto file_bits = fs::perms::group_read | (empty_dir ? fs::perms::group_write : fs::perms::none);
    own_by_group(dir, fs_group, dir_bits);
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      own_by_group(entry.path(), fs_group, entry.is_directory() ? dir_bits : file_bits);
    }
  }
}

std::vector<Mount> container_mounts(const kube::Object& container,
                                    const std::vector<std::pair<std::string, fs::path>>& volumes) {
  std::vector<Mount> mounts;
  for (const auto& vm : field(container, "volumeMounts")) {
    const std::string name = vm.value("name", "");
    auto it = std::find_if(volumes.begin(), volumes.end(),
                           [&](const auto& v) { return v.first == name; });
    if (it == volumes.end()) throw std::runtime_error("volumeMount of unknown volume " + name);
    fs::path host = it->second;
    if (vm.contains("subPath")) host /= vm["subPath"].get<std::string>();
    mounts.push_back({host, vm.value("mountPath", ""), vm.value("readOnly", false)});
  }
  return mounts;
}

}  // namespace local
