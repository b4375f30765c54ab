// Defaulting, applied in memory at the start of every sync (never written back), as the
// reference's scheme.Default does. Differences from mpi-operator v0.8 (documented for users in
// docs/mpijob-reference.md):
//  - runPolicy.cleanPodPolicy defaults to Running (the reference's code says None, its docs Running);
//  - slotsPerWorker, when absent, is the worker's first container's `nvidia.com/gpu` limit (or
//    request) when it asks for GPUs, so one rank runs per GPU; otherwise 1.
#pragma once

#include <optional>

#include "mpijob/types.h"

namespace mpijob {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

void apply_defaults(MPIJob& job);

// The whole-number GPU count the worker's first container asks for (limit, else request).
std::optional<int32_t> worker_gpus(const MPIJob& job);

}  // namespace mpijob
