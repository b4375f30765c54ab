// `korovod run --profiles FILE`: the admins' profiles (docs/profiles.md) in local mode. FILE is
// the chart's values file, or just its `profiles` map; the run gets the ConfigMap the chart would
// render, in the in-memory API, and the in-process operator reads it as the real one does.
#pragma once

#include <filesystem>
#include <optional>

#include "kube/client.h"

namespace local {

inline constexpr const char* kProfilesConfigMap = "korovod-profiles";

// The profiles ConfigMap for the job's namespace; nullopt when `file` is empty. Refuses, as the
// chart's admission policy does, a job naming a profile the file does not hold (or naming one
// with no file), and a bad file: std::invalid_argument with the message to print.
std::optional<kube::Object> profiles_config_map(const std::filesystem::path& file,
                                                const kube::Object& job);

}  // namespace local
