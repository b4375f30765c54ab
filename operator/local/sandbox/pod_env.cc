#include "local/sandbox/pod_env.h"

#include <regex>
#include <stdexcept>

#include "kube/object_meta.h"

namespace local {
namespace {

std::string str_at(const kube::Object& j, const kube::Object::json_pointer& p) {
  if (!j.contains(p) || !j.at(p).is_string()) return "";
  return j.at(p).get<std::string>();
}

// "metadata.labels['app']" -> ("labels", "app")
std::optional<std::pair<std::string, std::string>> map_path(const std::string& path) {
  static const std::regex re(R"(metadata\.(labels|annotations)\['([^']*)'\])");
  std::smatch m;
  if (!std::regex_match(path, m, re)) return std::nullopt;
  return std::make_pair(m[1].str(), m[2].str());
}

std::optional<std::string> key_of(const kube::Object& data, const std::string& key) {
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) return std::nullopt;
  return data[key].get<std::string>();
}

std::optional<std::string> from_key_ref(const kube::Object& ref, bool secret,
                                        const EnvSources& sources) {
  const std::string name = ref.value("name", "");
  const std::string key = ref.value("key", "");
  auto value = secret ? sources.secret_key(name, key) : sources.config_map_key(name, key);
  if (!value && !ref.value("optional", false)) {
    throw std::runtime_error(std::string(secret ? "secret" : "configmap") + " \"" + name +
                             "\" key \"" + key + "\" not found");
  }
  return value;
}

void add_env_from(const kube::Object& container, const EnvSources& sources, EnvList& env) {
  if (!container.contains("envFrom")) return;
  for (const auto& from : container["envFrom"]) {
    const std::string prefix = from.value("prefix", "");
    const bool secret = from.contains("secretRef");
    const kube::Object& ref = field(from, secret ? "secretRef" : "configMapRef");
    const std::string name = ref.value("name", "");
    kube::Object data = secret ? sources.secret_data(name) : sources.config_map_data(name);
    if (data.empty() && !ref.value("optional", false)) {
      throw std::runtime_error(std::string(secret ? "secret" : "configmap") + " \"" + name +
                               "\" not found");
    }
    for (const auto& [k, v] : data.items()) {
      if (v.is_string()) set_env(env, prefix + k, v.get<std::string>());
    }
  }
}

}  // namespace

void set_env(EnvList& env, const std::string& name, const std::string& value) {
  for (auto& [k, v] : env) {
    if (k == name) {
      v = value;
      return;
    }
  }
  env.emplace_back(name, value);
}

std::optional<std::string> get_env(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return v;
  }
  return std::nullopt;
}

std::string pod_field(const kube::Object& pod, const std::string& path) {
  using P = kube::Object::json_pointer;
  if (path == "metadata.name") return kube::name_of(pod);
  if (path == "metadata.namespace") return kube::namespace_of(pod);
  if (path == "metadata.uid") return kube::uid_of(pod);
  if (path == "spec.nodeName") return str_at(pod, P("/spec/nodeName"));
  if (path == "spec.serviceAccountName") return str_at(pod, P("/spec/serviceAccountName"));
  if (path == "status.podIP" || path == "status.podIPs") return str_at(pod, P("/status/podIP"));
  if (path == "status.hostIP" || path == "status.hostIPs") return str_at(pod, P("/status/hostIP"));
  if (auto m = map_path(path)) {
    const auto& meta = field(pod, "metadata");
    return key_of(meta.value(m->first, kube::Object::object()), m->second).value_or("");
  }
  throw std::invalid_argument("unsupported fieldRef " + path);
}

std::string expand_references(const std::string& s, const EnvList& env) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    if (s[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    size_t close = s[i + 1] == '(' ? s.find(')', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += s[i];
      continue;
    }
    const std::string name = s.substr(i + 2, close - i - 2);
    auto value = get_env(env, name);
    out += value ? *value : s.substr(i, close - i + 1);
    i = close;
  }
  return out;
}

EnvList resolve_container_env(const kube::Object& pod, const kube::Object& container,
                              const EnvSources& sources) {
  EnvList env;
  add_env_from(container, sources, env);
  if (!container.contains("env")) return env;
  for (const auto& e : container["env"]) {
    const std::string name = e.value("name", "");
    if (e.contains("value")) {
      set_env(env, name, expand_references(e["value"].get<std::string>(), env));
      continue;
    }
    const auto& from = field(e, "valueFrom");
    std::optional<std::string> value;
    if (from.contains("fieldRef")) {
      value = pod_field(pod, from["fieldRef"].value("fieldPath", ""));
    } else if (from.contains("configMapKeyRef")) {
      value = from_key_ref(from["configMapKeyRef"], false, sources);
    } else if (from.contains("secretKeyRef")) {
      value = from_key_ref(from["secretKeyRef"], true, sources);
    } else {
      value = "";  // resourceFieldRef and unknown sources: empty (documented)
    }
    if (value) set_env(env, name, *value);
  }
  return env;
}

const kube::Object& field(const kube::Object& j, const char* key) {
  static const kube::Object empty = kube::Object::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? empty : *it;
}

std::string base64_decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  uint32_t acc = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) continue;  // padding, newlines
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return out;
}

EnvSources client_env_sources(kube::Client& client, const std::string& ns) {
  auto data_of = [&client, ns](const kube::Resource& r, const std::string& name, bool decode) {
    kube::Object data = kube::Object::object();
    try {
      auto obj = client.get(r, ns, name);
      for (const auto& [k, v] : field(obj, "data").items()) {
        data[k] = decode ? base64_decode(v.get<std::string>()) : v.get<std::string>();
      }
      if (!decode) {
        for (const auto& [k, v] : field(obj, "stringData").items()) data[k] = v;
      }
    } catch (const kube::ApiError& e) {
      if (!kube::is_not_found(e)) throw;
    }
    return data;
  };
  EnvSources s;
  s.config_map_data = [=](const std::string& n) {
    return data_of(kube::resources::kConfigMaps, n, false);
  };
  s.secret_data = [=](const std::string& n) { return data_of(kube::resources::kSecrets, n, true); };
  s.config_map_key = [cm = s.config_map_data](const std::string& n, const std::string& k) {
    return key_of(cm(n), k);
  };
  s.secret_key = [sec = s.secret_data](const std::string& n, const std::string& k) {
    return key_of(sec(n), k);
  };
  return s;
}

}  // namespace local
