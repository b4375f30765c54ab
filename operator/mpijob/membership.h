// Elastic membership: which workers `discover_hosts.sh` lists, whether a job trains elastically,
// and the WorkersChanged event that records each change of the list.
//
// The list is what Horovod's (and korovodrun's) elastic driver polls, so it must name only
// workers that can take a rank now: pods the job controls, in phase Running with Ready=True,
// not being deleted, and whose index is below Worker.replicas (a worker being scaled away leaves
// the list in the same sync that deletes it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mpijob/status.h"
#include "mpijob/types.h"

namespace mpijob {

// "true" / "false" overrides what the launcher command says (validation refuses other values).
inline constexpr const char* kAnnotationElastic = "korovod.io/elastic";
inline constexpr const char* kReasonWorkersChanged = "WorkersChanged";

// A job trains elastically when the annotation says "true", or, without the annotation, when a
// launcher container's command or args mention --host-discovery-script (korovodrun's and
// horovodrun's elastic mode needs it).
bool is_elastic(const MPIJob& job);

// True when a worker pod can be listed: Running, Ready, not being deleted.
bool pod_trains(const kube::Object& pod);

// Names of the worker pods discover_hosts.sh lists (see above), sorted. worker_pods are the
// pods the job controls.
std::vector<std::string> listed_workers(const MPIJob& job,
                                        const std::vector<kube::Object>& worker_pods);

// The pod names a discover_hosts.sh lists ("echo <pod>.<job>...:<slots>" lines; the launcher's
// line counts too when it runs as a worker). Lines of another shape are ignored.
std::vector<std::string> workers_in_script(const std::string& script);

// "2 -> 3 workers (added pi-worker-2)" when the two lists differ; nullopt when they are equal.
std::optional<Event> membership_event(const std::vector<std::string>& before,
                                      const std::vector<std::string>& after);

// The label selector (string form) of the job's worker pods: the scale subresource's
// status.selector, for a HorizontalPodAutoscaler.
std::string worker_label_selector(const std::string& job_name);

}  // namespace mpijob
