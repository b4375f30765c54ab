// `korovod submit` / `kubectl korovod submit`: an MPIJob from a few flags (pure: no I/O).
//
// What it builds, for `--workers N --image I [--gpus-per-worker G] [--processes-per-worker P]
// [--cpu C] [--memory M] [--profile NAME] [--elastic MIN:MAX] [--mpi openmpi|intel|mpich] --
// COMMAND...` (docs/kubectl-korovod.md has the manifest it prints):
//   - slotsPerWorker: P, else G (one rank per GPU), else 1;
//   - N workers of image I running the image's sshd (no command), with requests = limits for C
//     and M, and limits nvidia.com/gpu: G;
//   - a launcher of image I whose args are COMMAND when it already starts the ranks (mpirun,
//     mpiexec, korovodrun, horovodrun), else `mpirun -n N*slots ... COMMAND` with each line of
//     output tagged with its rank (`kubectl korovod logs --rank`), or for --elastic `korovodrun`
//     with --min-np / --max-np (workers times slots) and the job's host discovery script;
//   - the korovod.io/profile annotation for --profile (the operator fills what the job leaves
//     unset from that admin profile).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "mpijob/types.h"

namespace cli {

struct ElasticRange {
  int min_workers = 1, max_workers = 1;
};

struct SubmitRequest {
  std::string name;
  std::string ns;  // "" leaves metadata.namespace out (the server's default applies)
  int workers = 1;
  std::string image;
  int gpus_per_worker = 0;
  std::optional<int> processes_per_worker;
  std::string cpu, memory;  // "" = not set
  std::string profile;      // "" = none
  std::optional<ElasticRange> elastic;
  mpijob::MpiImplementation mpi = mpijob::MpiImplementation::OpenMPI;
  std::vector<std::string> command;
};

// "2:8" -> {2, 8}. Throws std::invalid_argument naming --elastic.
ElasticRange parse_elastic(const std::string& text);
// "openmpi" | "intel" | "mpich" (any case). Throws std::invalid_argument naming --mpi.
mpijob::MpiImplementation parse_mpi(const std::string& text);

// Ranks per worker: --processes-per-worker, else one per GPU, else one.
int ranks_per_worker(const SubmitRequest& r);

// The MPIJob. Throws std::invalid_argument naming the flag that is wrong.
kube::Object build_mpijob(const SubmitRequest& r);

}  // namespace cli
