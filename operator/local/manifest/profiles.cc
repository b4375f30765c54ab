#include "local/manifest/profiles.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "local/manifest/yaml_json.h"
#include "mpijob/profile.h"

namespace local {
namespace {

kube::Object read_profiles_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  const auto docs = yaml_documents(text.str());
  if (docs.empty()) throw std::invalid_argument(file.string() + ": no profiles in it");
  try {
    return mpijob::profiles_config_map_data(docs.front());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(file.string() + ": " + e.what());
  }
}

}  // namespace

std::optional<kube::Object> profiles_config_map(const std::filesystem::path& file,
                                                const kube::Object& job) {
  const mpijob::MPIJob j(job);
  const std::string wanted = j.annotation(mpijob::kAnnotationProfile);
  if (file.empty()) {
    if (wanted.empty()) return std::nullopt;
    throw std::invalid_argument("metadata.annotations[" + std::string(mpijob::kAnnotationProfile) +
                                "]: the job names profile \"" + wanted +
                                "\": pass the profiles with --profiles FILE");
  }
  kube::Object cm = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", kProfilesConfigMap}, {"namespace", j.ns()}}},
                     {"data", read_profiles_file(file)}};
  const auto choice = mpijob::choose_profile(j, mpijob::profiles_from_config_map(cm));
  if (!choice.error_reason.empty()) throw std::invalid_argument(choice.error_message);
  return cm;
}

}  // namespace local
