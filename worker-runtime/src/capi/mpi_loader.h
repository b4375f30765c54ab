// How libkorovod.so, which never links MPI, reaches it: launch detection and loading
// libkorovod_mpi.so from the directory libkorovod.so was itself loaded from.
#pragma once

#include <string>

#include "capi/mpi_plugin_abi.h"
#include "korovod/config.h"

namespace korovod::capi {

// The variable that says an MPI launcher started this process, or "" when none is set:
//   OMPI_COMM_WORLD_SIZE   Open MPI's mpirun / mpiexec (every version)
//   PMIX_RANK              PMIx launchers: Open MPI 5's prterun, Slurm's srun --mpi=pmix
//   PMI_RANK, PMI_SIZE     PMI-1/2 launchers: MPICH's and Intel MPI's Hydra, MVAPICH, srun --mpi=pmi2
//   MPI_LOCALNRANKS        MPICH Hydra
// (Slurm's own SLURM_PROCID is not one: srun starts plain programs too, with no MPI world.)
std::string mpi_launch_variable(const EnvMap& env);

// Path of libkorovod_mpi.so next to libkorovod.so ("" when dladdr cannot tell).
std::string mpi_plugin_path();

// Loads the plugin (RTLD_NOW | RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols
// globally; RTLD_NODELETE: Runtimes and the atexit finalizer run code from it). The error
// carries dlerror()'s text.
Result<const MpiPlugin*> load_mpi_plugin();
// The plugin when something already loaded it, else null (never loads MPI).
const MpiPlugin* loaded_mpi_plugin();

}  // namespace korovod::capi
