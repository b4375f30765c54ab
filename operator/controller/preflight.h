// Startup checks of the operator binary, so a broken install fails at once with a message
// that says what to fix instead of a controller that retries forever:
//   - the MPIJob CRD is served (a list of kubeflow.org/v2beta1 mpijobs does not return 404),
//     and with gang scheduling the PodGroup CRD too;
//   - RBAC allows every verb the operator uses (SelfSubjectAccessReview per verb, resource and
//     namespace), naming each missing one.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kube/client.h"
#include "mpijob/builders.h"

namespace controller {

class PreflightError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Permission {
  std::string group, resource, subresource, verb;
  std::string ns;         // "" = all namespaces / cluster-scoped
  bool required = true;   // false: only warned about
  std::string why;        // for optional ones
  std::string describe() const;  // "create pods in namespace ns"
};

// Every permission the operator uses for these settings (kept in step with
// tests/integration/helm/operator-rbac.json).
// progress: training progress into MPIJob.status (--progress-interval > 0; progress_poller.h),
// whose verbs are optional: without them the jobs run, only without progress.
std::vector<Permission> needed_permissions(const std::vector<std::string>& namespaces,
                                           const mpijob::BuildOptions& build, bool leader_elect,
                                           const std::string& lock_namespace, bool progress = false);

// Throws PreflightError when a CRD is missing or the list is forbidden.
void check_crds(kube::Client& client, const std::vector<std::string>& namespaces,
                const mpijob::BuildOptions& build);

// Asks the API server about each permission. Returns the optional ones that are denied
// (to warn about); throws PreflightError naming every denied required one. When the review
// API itself is unavailable, returns {} (the informers' errors will say more).
std::vector<Permission> check_permissions(kube::Client& client,
                                          const std::vector<Permission>& perms);

}  // namespace controller
