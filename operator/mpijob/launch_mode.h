// How the launcher reaches the workers. An MPIJob picks it with the annotation
// korovod.io/launch:
//   "ssh" (or no annotation)  the reference's path: workers run sshd, the launcher's mpirun or
//                             korovodrun logs in with the job's SSH key. Manifests written for
//                             mpi-operator run unchanged.
//   "agent"                   no pod runs sshd: each worker runs `korovod-agent serve` (its
//                             default command), and the launcher reaches it with
//                             `korovod-agent rsh`, a drop-in for ssh that proves the job's secret
//                             on every connection (docs/agent.md). Every pod of the job is made
//                             to pass the `restricted` Pod Security profile: non-root, no
//                             privilege escalation, no capabilities, the runtime's seccomp
//                             profile; only fields the template leaves unset are filled.
// An annotation, not a spec field: kubeflow.org/v2beta1's schema is mpi-operator's, and a field
// of korovod's own would be pruned by (or fail validation against) that CRD, so one manifest
// could not run on both operators; annotations pass through every version of the schema.
#pragma once

#include <string>

#include "mpijob/types.h"

namespace mpijob {

inline constexpr const char* kAnnotationLaunch = "korovod.io/launch";
enum class LaunchMode { Ssh, Agent };

// From the annotation; throws std::invalid_argument naming it for a value other than "ssh" or
// "agent" (validation refuses such jobs first).
LaunchMode launch_mode(const MPIJob& job);

// The rsh command the launcher uses in agent mode (OMPI_MCA_plm_rsh_agent, KOROVOD_RSH_AGENT).
inline constexpr const char* kAgentRsh = "korovod-agent rsh";
// What a worker runs in agent mode when its container sets neither command nor args.
inline constexpr const char* kAgentServe[] = {"korovod-agent", "serve"};
// The uid and gid the pods run as when neither the pod nor a container says (restricted needs
// a non-root user; uid 1000 is the korovod-worker images' mpiuser, whose home is their WORKDIR).
inline constexpr int kAgentDefaultUid = 1000;

// Fills what the `restricted` Pod Security profile needs and the pod spec leaves unset:
// securityContext.runAsNonRoot, runAsUser/runAsGroup (kAgentDefaultUid, only when no container
// sets runAsUser either), seccompProfile RuntimeDefault; in every container and init container
// allowPrivilegeEscalation false and capabilities.drop [ALL]. A value the template sets is kept,
// even one the profile refuses: the API server's admission then names it.
void apply_restricted_defaults(kube::Object& pod_spec);

}  // namespace mpijob
