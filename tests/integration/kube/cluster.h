// What every kube integration test needs from the real control plane started by
// tests/cluster/testcluster: its config, clients, a namespace of its own, etcd compaction,
// and polling.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/rest_client.h"

namespace kube::testing {

// The testcluster state directory: $KOROVOD_TESTCLUSTER_DIR, else the directory of
// $KUBECONFIG. Empty when neither is set (tests then skip).
std::string cluster_dir();

// The cluster's kubeconfig (current context: admin bearer token).
Config cluster_config();

// Options for test clients: a generous rate limit so tests are not throttled client-side.
RestClientOptions fast_options();

std::unique_ptr<RestClient> make_client(const Config& config = cluster_config());

// Creates namespace `prefix-<random>` and deletes it (in the background) when destroyed.
class TestNamespace {
 public:
  TestNamespace(Client& client, const std::string& prefix);
  ~TestNamespace();
  const std::string& name() const { return name_; }

 private:
  Client& client_;
  std::string name_;
};

// etcd's current revision and a physical compaction up to it (through etcd's JSON gateway at
// the URL in DIR/etcd-endpoint). Returns the compacted revision.
int64_t compact_etcd();

// Polls `pred` every 50 ms until it holds or `timeout` passes; returns its last value.
bool eventually(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A throwaway CA (PEM) that signed nothing the cluster knows.
std::string throwaway_ca_pem();

// metadata.resourceVersion / metadata.name of an object.
std::string rv_of(const Object& obj);
std::string name_of(const Object& obj);

}  // namespace kube::testing

// Skips the current test when no cluster is configured (outside ctest's kube_cluster fixture).
#define REQUIRE_CLUSTER()                                                              \
  do {                                                                                 \
    if (::kube::testing::cluster_dir().empty())                                        \
      GTEST_SKIP() << "no test cluster: set KUBECONFIG or KOROVOD_TESTCLUSTER_DIR";    \
  } while (0)
