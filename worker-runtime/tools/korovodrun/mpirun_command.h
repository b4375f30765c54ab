// korovodrun --mpi: the Open MPI mpirun command line horovodrun builds (horovod/runner/mpi_run.py),
// and running it in korovodrun's place.
#pragma once

#include <string>
#include <vector>

#include "launch/hosts.h"
#include "korovod/config.h"
#include "launch_options.h"

namespace korovod::launcher {

// mpirun [--allow-run-as-root] --tag-output -np N -H hosts -bind-to none -map-by slot
//   -mca pml ob1 -mca btl ^openib [64+ hosts: -mca plm_rsh_no_tree_spawn true ...]
//   [-mca plm_rsh_args "-p PORT -i KEY"] [-mca btl_tcp_if_include IF,...]
//   -x NAME for every exportable variable of `env` (sorted) COMMAND...
// `env` is the environment mpirun will run with (the caller's plus tuning_env()).
std::vector<std::string> mpirun_command(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                                        const EnvMap& env, bool running_as_root);

// Whether `mpirun --version` output is Open MPI's (the only mpirun whose flags are built here).
bool is_open_mpi_version(const std::string& version_output);

// Checks that `mpirun` (looked up on env's PATH) is Open MPI, then replaces this process with it.
// Returns only on failure, naming what is missing.
Status exec_mpirun(const std::vector<std::string>& argv, const EnvMap& env);

}  // namespace korovod::launcher
