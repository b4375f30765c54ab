// The environment korovodrun gives the ranks: the tuning flags as the runtime's variables
// (config_parser.set_env_from_args in horovodrun), the rendezvous store, and each rank's place
// under both the KOROVOD_ names the runtime reads and the HOROVOD_ names scripts read.
#pragma once

#include <string>

#include "launch/hosts.h"
#include "korovod/config.h"
#include "launch_options.h"

namespace korovod::launcher {

// The variables the tuning flags set (nothing for a flag not given). Each is set under both its
// HOROVOD_ and KOROVOD_ name: the runtime prefers KOROVOD_, so a flag must also win over a
// KOROVOD_ variable already in the caller's environment.
EnvMap tuning_env(const LaunchOptions& options);

struct Rendezvous {
  std::string address;  // numeric IPv4 address every host reaches the store on
  int port = 0;
};

// One rank's own variables: world (KOROVOD_RANK/SIZE, the store, KOROVOD_RENDEZVOUS_SERVER=
// external so rank 0 does not host a store of its own), KOROVOD_HOST_ID = the host's name as
// given (so the runtime's local/cross ranks are the ones exported here), and horovodrun's
// HOROVOD_{HOSTNAME,RANK,SIZE,LOCAL_RANK,LOCAL_SIZE,CROSS_RANK,CROSS_SIZE}.
EnvMap slot_env(const SlotAssignment& slot, const Rendezvous& rendezvous);

// `base` with `overrides` applied (an override replaces the variable of the same name).
EnvMap merged(EnvMap base, const EnvMap& overrides);

// Whether a variable travels to another host (horovodrun's env.is_exportable: not BASH_FUNC_*,
// OLDPWD, *CUDA_VISIBLE_DEVICES or a job secret: HOROVOD_SECRET_KEY, KOROVOD_JOB_SECRET, which
// goes over the ssh session's stdin instead), and is a name a shell accepts.
bool is_exportable(const std::string& name);

// A word for a POSIX shell: itself when safe, else in single quotes.
std::string shell_quote(const std::string& word);

}  // namespace korovod::launcher
