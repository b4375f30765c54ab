#include "kube/client.h"

namespace kube::resources {

const Resource kPods{"", "v1", "pods", "Pod", true};
const Resource kServices{"", "v1", "services", "Service", true};
const Resource kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
const Resource kSecrets{"", "v1", "secrets", "Secret", true};
const Resource kEvents{"", "v1", "events", "Event", true};
const Resource kNamespaces{"", "v1", "namespaces", "Namespace", false};
const Resource kNodes{"", "v1", "nodes", "Node", false};
const Resource kServiceAccounts{"", "v1", "serviceaccounts", "ServiceAccount", true};
const Resource kJobs{"batch", "v1", "jobs", "Job", true};
const Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                          "customresourcedefinitions",
                                          "CustomResourceDefinition", false};
const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass",
                                false};

}  // namespace kube::resources
