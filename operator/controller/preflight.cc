#include "controller/preflight.h"

#include "mpijob/network_policy.h"
#include "mpijob/types.h"

namespace controller {
namespace {

const kube::Resource kSelfSubjectAccessReviews{"authorization.k8s.io", "v1",
                                               "selfsubjectaccessreviews",
                                               "SelfSubjectAccessReview", false};

std::string where(const std::string& ns) {
  return ns.empty() ? "all namespaces" : "namespace " + ns;
}

}  // namespace

std::string Permission::describe() const {
  std::string res = resource + (subresource.empty() ? "" : "/" + subresource);
  if (!group.empty()) res += "." + group;
  return verb + " " + res + " in " + (ns.empty() && resource == "priorityclasses"
                                          ? std::string("the cluster")
                                          : where(ns));
}

std::vector<Permission> needed_permissions(const std::vector<std::string>& namespaces,
                                           const mpijob::BuildOptions& build, bool leader_elect,
                                           const std::string& lock_namespace, bool progress) {
  std::vector<Permission> out;
  std::vector<std::string> nss = namespaces;
  if (nss.empty()) nss.push_back("");
  auto add = [&](const std::string& g, const std::string& r, const std::string& sub,
                 std::initializer_list<const char*> verbs, const std::string& ns,
                 bool required = true, const std::string& why = "") {
    for (const char* v : verbs) out.push_back({g, r, sub, v, ns, required, why});
  };
  for (const auto& ns : nss) {
    add("kubeflow.org", "mpijobs", "", {"list", "watch", "delete"}, ns);
    add("kubeflow.org", "mpijobs", "status", {"update"}, ns);
    add("kubeflow.org", "mpijobs", "finalizers", {"update"}, ns, false,
        "children with blockOwnerDeletion need it where OwnerReferencesPermissionEnforcement runs");
    add("", "pods", "", {"list", "watch", "create", "delete"}, ns);
    for (const char* r : {"services", "configmaps", "secrets"}) {
      add("", r, "", {"list", "watch", "create", "update"}, ns);
    }
    add("batch", "jobs", "", {"list", "watch", "create", "update"}, ns);
    add("batch", "jobs", "status", {"update"}, ns, false,
        "resuming a launcher Job that had started clears its status.startTime");
    add("", "events", "", {"create", "patch"}, ns);  // patch: repeats bump count
    if (!build.gang_scheduler.empty()) {
      const kube::Resource pg = mpijob::pod_group_resource(build);
      add(pg.group, pg.resource, "", {"list", "watch", "create", "update", "delete"}, ns);
    }
    if (progress) {
      const std::string why = "training progress in MPIJob.status (--progress-interval; docs/progress.md)";
      add("", "pods", "log", {"get"}, ns, false, why);
      add("kubeflow.org", "mpijobs", "status", {"patch"}, ns, false, why);
    }
    if (build.network_policy.mode != mpijob::NetworkPolicyMode::Off) {
      add("networking.k8s.io", "networkpolicies", "", {"list", "watch", "create", "update", "delete"}, ns);
    }
  }
  add("scheduling.k8s.io", "priorityclasses", "", {"list", "watch"}, "");
  if (leader_elect) {
    add("coordination.k8s.io", "leases", "", {"get", "create", "update"}, lock_namespace);
  }
  return out;
}

void check_crds(kube::Client& client, const std::vector<std::string>& namespaces,
                const mpijob::BuildOptions& build) {
  std::vector<std::string> nss = namespaces;
  if (nss.empty()) nss.push_back("");
  kube::ListOptions one;
  one.limit = 1;
  for (const auto& ns : nss) {
    try {
      client.list(mpijob::kMPIJobs, ns, one);
    } catch (const kube::ApiError& e) {
      if (kube::is_not_found(e)) {
        throw PreflightError(
            "the MPIJob CRD is not installed: listing kubeflow.org/v2beta1 mpijobs returned 404 "
            "NotFound. Install it first: kubectl apply --server-side -f "
            "crds/kubeflow.org_mpijobs.yaml (the Helm chart installs it from its crds/ folder)");
      }
      if (kube::is_forbidden(e) || kube::is_unauthorized(e)) {
        throw PreflightError("RBAC forbids list mpijobs.kubeflow.org in " + where(ns) + ": " +
                             e.api_message());
      }
      throw;
    }
    if (!build.gang_scheduler.empty()) {
      const kube::Resource pg = mpijob::pod_group_resource(build);
      try {
        client.list(pg, ns, one);
      } catch (const kube::ApiError& e) {
        if (kube::is_not_found(e)) {
          throw PreflightError("--gang-scheduling=" + build.gang_scheduler + " needs the " +
                               pg.resource + "." + pg.group + " CRD (" + pg.api_version() +
                               "), which is not installed");
        }
        if (kube::is_forbidden(e)) {
          throw PreflightError("RBAC forbids list " + pg.resource + "." + pg.group + " in " +
                               where(ns) + ": " + e.api_message());
        }
        throw;
      }
    }
  }
}

std::vector<Permission> check_permissions(kube::Client& client,
                                          const std::vector<Permission>& perms) {
  std::vector<Permission> warn;
  std::string denied;
  for (const auto& p : perms) {
    kube::Object attrs = {{"verb", p.verb}, {"group", p.group}, {"resource", p.resource}};
    if (!p.subresource.empty()) attrs["subresource"] = p.subresource;
    if (!p.ns.empty()) attrs["namespace"] = p.ns;
    kube::Object review = {{"apiVersion", "authorization.k8s.io/v1"},
                           {"kind", "SelfSubjectAccessReview"},
                           {"spec", {{"resourceAttributes", attrs}}}};
    kube::Object result;
    try {
      result = client.create(kSelfSubjectAccessReviews, "", review);
    } catch (const kube::ApiError& e) {
      if (kube::is_not_found(e) || kube::is_forbidden(e)) return {};  // cannot ask; go on
      throw;
    }
    const bool allowed = result.contains("status") && result["status"].value("allowed", false);
    if (allowed) continue;
    if (p.required) {
      denied += "\n  - " + p.describe();
    } else {
      warn.push_back(p);
    }
  }
  if (!denied.empty()) {
    throw PreflightError("RBAC forbids verbs the operator needs (grant them to its service "
                         "account; the Helm chart's ClusterRole has them all):" + denied);
  }
  return warn;
}

}  // namespace controller
