#include "kube/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace kube {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Reads one kubeconfig and reports errors with the file name and the YAML path of the field.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string path) : path_(std::move(path)) {
    dir_ = fs::absolute(fs::path(path_)).parent_path();
  }

  // Parses the file (once); errors name the file.
  void load() {
    const auto text = read_file(path_);
    if (!text) throw ConfigError("kubeconfig " + path_ + ": cannot read the file");
    try {
      root_ = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      fail("", std::string("not valid YAML: ") + e.what());
    }
    if (!root_.IsMap()) {
      // An empty file is an empty kubeconfig (kubectl accepts it in a KUBECONFIG list).
      if (root_.IsNull()) root_ = YAML::Node(YAML::NodeType::Map);
      else fail("", "not a YAML mapping");
    }
  }

  const std::string& path() const { return path_; }
  std::string current_context() const {
    return optional_scalar(root_, "current-context", "current-context");
  }

  // The entry `name` of root[list] ({name, <inner>: {...}}), or nullopt; with its YAML path.
  std::optional<std::pair<YAML::Node, std::string>> find(const std::string& list, const std::string& inner,
                                                         const std::string& name) const {
    const YAML::Node seq = root_[list];
    if (seq && !seq.IsNull() && !seq.IsSequence()) fail(list, "must be a list");
    for (size_t i = 0; seq && seq.IsSequence() && i < seq.size(); ++i) {
      const std::string at = list + "[" + std::to_string(i) + "]";
      if (!seq[i].IsMap()) fail(at, "must be a mapping");
      if (scalar(seq[i], "name", at + ".name") != name) continue;
      const YAML::Node body = seq[i][inner];
      if (!body || !body.IsMap()) fail(at + "." + inner, "missing");
      return std::make_pair(body, at + "." + inner);
    }
    return std::nullopt;
  }

  // The context's own fields (cluster and user names, namespace).
  void read_context(const YAML::Node& ctx, const std::string& at, std::string& cluster,
                    std::string& user, Config& c) const {
    cluster = scalar(ctx, "cluster", at + ".cluster");
    user = optional_scalar(ctx, "user", at + ".user");
    const std::string ns = optional_scalar(ctx, "namespace", at + ".namespace");
    if (!ns.empty()) c.namespace_ = ns;
  }

  void read_cluster(const YAML::Node& cluster, const std::string& at, Config& c) const {
    c.server = scalar(cluster, "server", at + ".server");
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    c.ca_pem = pem(cluster, "certificate-authority-data", "certificate-authority", at);
    const YAML::Node insecure = cluster["insecure-skip-tls-verify"];
    if (insecure && !insecure.IsNull()) {
      try {
        c.insecure_skip_tls_verify = insecure.as<bool>();
      } catch (const YAML::Exception&) {
        fail(at + ".insecure-skip-tls-verify", "must be true or false");
      }
    }
  }

  void read_user(const YAML::Node& user, const std::string& at, Config& c) const {
    c.token = optional_scalar(user, "token", at + ".token");
    const std::string token_file = optional_scalar(user, "tokenFile", at + ".tokenFile");
    if (!token_file.empty()) c.token_file = resolve(token_file);
    c.client_cert_pem = pem(user, "client-certificate-data", "client-certificate", at);
    c.client_key_pem = pem(user, "client-key-data", "client-key", at);
    if (c.client_cert_pem.empty() != c.client_key_pem.empty())
      fail(at, "client-certificate and client-key must be given together");
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw ConfigError("kubeconfig " + path_ + ": " + (field.empty() ? "" : field + ": ") + why);
  }

  std::string optional_scalar(const YAML::Node& map, const std::string& key,
                              const std::string& field) const {
    const YAML::Node n = map[key];
    if (!n || n.IsNull()) return "";
    if (!n.IsScalar()) fail(field, "must be a string");
    return n.as<std::string>();
  }

  std::string scalar(const YAML::Node& map, const std::string& key,
                     const std::string& field) const {
    std::string v = optional_scalar(map, key, field);
    if (v.empty()) fail(field, "missing");
    return v;
  }

  // A PEM given inline (base64 *-data) or as a file path relative to the kubeconfig.
  std::string pem(const YAML::Node& map, const std::string& data_key, const std::string& file_key,
                  const std::string& at) const {
    const std::string data = optional_scalar(map, data_key, at + "." + data_key);
    if (!data.empty()) {
      try {
        return base64_decode(data);
      } catch (const std::invalid_argument&) {
        fail(at + "." + data_key, "not valid base64");
      }
    }
    const std::string file = optional_scalar(map, file_key, at + "." + file_key);
    if (file.empty()) return "";
    const std::string resolved = resolve(file);
    const auto text = read_file(resolved);
    if (!text) fail(at + "." + file_key, "cannot read " + resolved);
    return *text;
  }

  std::string resolve(const std::string& file) const {
    const fs::path p(file);
    return p.is_absolute() ? file : (dir_ / p).string();
  }

  std::string path_;
  fs::path dir_;
  YAML::Node root_;
};

// kubectl's merge of several kubeconfigs (a KUBECONFIG list): the first file that sets
// current-context wins, and each context, cluster and user is taken from the first file that
// names it; relative paths resolve against the file the entry came from.
Config read_merged(std::vector<KubeconfigReader>& files, const std::string& wanted_context) {
  for (auto& f : files) f.load();
  const std::string where = files.size() == 1 ? "kubeconfig " + files[0].path() : [&] {
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ":") + f.path();
    return "KUBECONFIG=" + list;
  }();
  std::string context = wanted_context;
  for (size_t i = 0; context.empty() && i < files.size(); ++i) context = files[i].current_context();
  if (context.empty()) throw ConfigError(where + ": current-context: missing");
  auto first = [&](const std::string& list, const std::string& inner, const std::string& name,
                   const std::string& referenced_by)
      -> std::pair<const KubeconfigReader*, std::pair<YAML::Node, std::string>> {
    for (const auto& f : files)
      if (auto hit = f.find(list, inner, name)) return {&f, *hit};
    throw ConfigError(where + ": " + referenced_by + ": " + inner + " \"" + name + "\" not found in " + list);
  };
  Config c;
  const auto [ctx_file, ctx] = first("contexts", "context", context, "current-context");
  std::string cluster_name, user_name;
  ctx_file->read_context(ctx.first, ctx.second, cluster_name, user_name, c);
  const auto [cluster_file, cluster] = first("clusters", "cluster", cluster_name, ctx.second + ".cluster");
  cluster_file->read_cluster(cluster.first, cluster.second, c);
  if (!user_name.empty()) {
    const auto [user_file, user] = first("users", "user", user_name, ctx.second + ".user");
    user_file->read_user(user.first, user.second, c);
  }
  return c;
}

}  // namespace

ConfigEnvironment ConfigEnvironment::process() {
  ConfigEnvironment env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  return env;
}

Config load_kubeconfig(const std::string& path, const std::string& context) {
  std::vector<KubeconfigReader> files;
  files.emplace_back(path);
  return read_merged(files, context);
}

Config load_kubeconfigs(const std::vector<std::string>& paths, const std::string& context) {
  if (paths.empty()) throw ConfigError("no kubeconfig files to load");
  std::vector<KubeconfigReader> files;
  for (const auto& p : paths) files.emplace_back(p);
  return read_merged(files, context);
}

std::optional<Config> load_in_cluster(const ConfigEnvironment& env) {
  const auto host = env.getenv("KUBERNETES_SERVICE_HOST");
  const auto port = env.getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) return std::nullopt;
  const fs::path dir(env.service_account_dir);
  Config c;
  // An IPv6 service host needs brackets in a URL.
  const bool v6 = host->find(':') != std::string::npos;
  c.server = "https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port;
  c.token_file = (dir / "token").string();
  if (!read_file(c.token_file))
    throw ConfigError("in-cluster config: cannot read the service account token " + c.token_file);
  const auto ca = read_file((dir / "ca.crt").string());
  if (!ca) throw ConfigError("in-cluster config: cannot read " + (dir / "ca.crt").string());
  c.ca_pem = *ca;
  if (const auto ns = read_file((dir / "namespace").string()); ns && !trim(*ns).empty())
    c.namespace_ = trim(*ns);
  return c;
}

Config load_config(const std::string& explicit_kubeconfig, const ConfigEnvironment& env, const std::string& context) {
  if (!explicit_kubeconfig.empty()) return load_kubeconfig(explicit_kubeconfig, context);
  if (const auto list = env.getenv("KUBECONFIG"); list && !list->empty()) {
    std::stringstream s(*list);
    std::vector<std::string> paths;
    for (std::string path; std::getline(s, path, ':');)  // missing files are skipped, as kubectl
      if (!path.empty() && fs::exists(path) &&
          std::find(paths.begin(), paths.end(), path) == paths.end())
        paths.push_back(path);
    if (paths.empty()) throw ConfigError("KUBECONFIG=" + *list + ": none of its files exists");
    return load_kubeconfigs(paths, context);
  }
  if (auto in_cluster = load_in_cluster(env)) return *in_cluster;
  if (const auto home = env.getenv("HOME"); home && !home->empty()) {
    const std::string path = (fs::path(*home) / ".kube" / "config").string();
    if (fs::exists(path)) return load_kubeconfig(path, context);
  }
  throw ConfigError(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run in a cluster, or "
      "create ~/.kube/config");
}

TokenSource::TokenSource(const Config& config, Clock& clock)
    : file_(config.token_file), clock_(clock), token_(config.token) {}

std::string TokenSource::token() {
  MutexLock lock(mu_);
  if (file_.empty()) return token_;
  struct stat st {};
  std::optional<int64_t> mtime;
  if (::stat(file_.c_str(), &st) == 0)
    mtime = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  const auto now = clock_.steady_now();
  const bool stale = !mtime_ns_ || mtime != mtime_ns_ || now - read_at_ >= kRereadEvery;
  if (stale) {
    // A token that cannot be read right now (mid-rotation) keeps the last good one.
    if (const auto text = read_file(file_)) {
      token_ = trim(*text);
      mtime_ns_ = mtime;
      read_at_ = now;
    } else if (!mtime_ns_) {
      throw ConfigError("cannot read the bearer token file " + file_);
    }
  }
  return token_;
}

std::string base64_decode(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char ch : in) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+') v = 62;
    else if (ch == '/') v = 63;
    else if (ch == '=' || ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    else throw std::invalid_argument("invalid base64 character");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace kube
