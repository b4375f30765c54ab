// Where the API server is and how to authenticate: kube::Config, loaded from a kubeconfig file
// or from the in-cluster service account, with kubectl's precedence (load_config).
//
// The process environment and the service-account directory come in through ConfigEnvironment
// so tests can point them at temp files instead of the real machine.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kube/clock.h"
#include "kube/mutex.h"

namespace kube {

struct Config {
  std::string server;  // "https://host:port", no trailing slash
  std::string ca_pem;  // PEM of the CA(s) that sign the server; "" = the system store
  bool insecure_skip_tls_verify = false;
  std::string token;       // bearer token, used when token_file is empty
  std::string token_file;  // bearer token re-read on rotation (TokenSource)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string namespace_ = "default";  // the context's namespace (in-cluster: the pod's)
};

// A kubeconfig or service-account file that cannot be used. what() names the file and, for a
// malformed kubeconfig, the field: "kubeconfig /x/y: contexts[0].context.cluster: missing".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The process-level inputs of configuration discovery.
struct ConfigEnvironment {
  std::function<std::optional<std::string>(const std::string& name)> getenv;
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // The real process environment (std::getenv) and the real service-account directory.
  static ConfigEnvironment process();
};

// Reads one kubeconfig. `context` "" = its current-context. Relative file paths inside it are
// resolved against the kubeconfig's directory, as kubectl does.
Config load_kubeconfig(const std::string& path, const std::string& context = "");
// Several kubeconfigs merged as kubectl merges a KUBECONFIG list: the first file that sets
// current-context wins, and each context, cluster and user comes from the first file naming it.
Config load_kubeconfigs(const std::vector<std::string>& paths, const std::string& context = "");

// The pod's service account; std::nullopt when not running in a cluster
// (KUBERNETES_SERVICE_HOST/PORT unset). The token is read through token_file so rotation works.
std::optional<Config> load_in_cluster(const ConfigEnvironment& env);

// kubectl's precedence: `explicit_kubeconfig` (the --kubeconfig flag) > $KUBECONFIG (the
// existing files of a ':'-separated list, merged as load_kubeconfigs) > in-cluster >
// $HOME/.kube/config. `context` (kubectl's --context) picks a kubeconfig context other than its
// current-context; in-cluster has none. Throws ConfigError when none applies.
Config load_config(const std::string& explicit_kubeconfig, const ConfigEnvironment& env,
                   const std::string& context = "");

// The bearer token to send now. With a token_file, the file is re-read when its mtime changes
// or a minute after the last read (projected service-account tokens rotate in place).
// Thread-safe.
class TokenSource {
 public:
  TokenSource(const Config& config, Clock& clock);
  std::string token();

 private:
  static constexpr std::chrono::seconds kRereadEvery{60};

  // Constant after construction.
  const std::string file_;
  Clock& clock_;

  Mutex mu_;
  std::string token_ KOROVOD_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point read_at_ KOROVOD_GUARDED_BY(mu_);
  std::optional<int64_t> mtime_ns_ KOROVOD_GUARDED_BY(mu_);
};

// Decodes standard base64 (whitespace ignored), as kubeconfig *-data fields are stored.
// Throws std::invalid_argument on other characters.
std::string base64_decode(const std::string& in);

}  // namespace kube
