// Which MPIJob an owned object belongs to (the reference's handleObject): the object's
// controller ownerReference when it is a kubeflow.org/v2beta1 MPIJob; for a Pod controlled by a
// batch/v1 Job, the Job's controller (Pod -> launcher Job -> MPIJob). Pure: the Job is looked
// up through a callback. Reads only the informer event's header (namespace, owner references),
// not the object.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "kube/client.h"
#include "kube/store.h"

namespace controller {

// (namespace, name) -> the Job, when known.
using JobLookup =
    std::function<std::optional<kube::Object>(const std::string& ns, const std::string& name)>;

// "ns/name" of the owning MPIJob, or nullopt. Pass `jobs` for Pods only (nullptr otherwise).
std::optional<std::string> owning_mpijob_key(const kube::ObjectEvent& obj, const JobLookup& jobs);
std::optional<std::string> owning_mpijob_key(const kube::Object& obj, const JobLookup& jobs);

}  // namespace controller
