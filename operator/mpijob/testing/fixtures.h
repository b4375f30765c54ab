// Shared test fixtures for the MPIJob tests: sample jobs, observed pods, a fixed key generator
// and golden-file comparison (KOROVOD_UPDATE_GOLDEN=1 rewrites the files and skips the check:
// docs/testing.md, "Goldens").
#pragma once

#include <string>

#include "mpijob/ssh_keys.h"
#include "mpijob/types.h"

namespace mpijob::testing {

inline constexpr const char* kJobUid = "11111111-2222-3333-4444-555555555555";

// A deterministic key pair ("PRIVATE"/"PUBLIC" markers, not real keys).
class FixedKeyGenerator final : public KeyGenerator {
 public:
  SshKeyPair generate() override {
    ++calls;
    return {"-----BEGIN EC PRIVATE KEY-----\nFAKE\n-----END EC PRIVATE KEY-----\n",
            "ecdsa-sha2-nistp521 AAAAFAKE\n", "fake-job-secret-0123456789abcdef"};
  }
  int calls = 0;
};

// The pi example (examples/v2beta1/pi/pi.yaml) as JSON, in namespace "default", with a uid,
// `workers` workers and the given mpiImplementation.
kube::Object pi_job(int workers = 2, const std::string& impl = "OpenMPI");

// A pod named `name` controlled by owner_uid with the given phase (and Ready when Running).
kube::Object pod(const std::string& name, const std::string& phase,
                 const std::string& owner_uid = kJobUid, const std::string& uid = "");
// A worker pod of job `job` (labels as the builder sets them).
kube::Object worker(const std::string& job, int index, const std::string& phase,
                    const std::string& uid = "");
// The launcher Job, with an optional condition type ("Complete"/"Failed") set True.
kube::Object launcher_job(const std::string& job, const std::string& condition = "",
                          const std::string& reason = "", int failed = 0);

kube::Object read_json_file(const std::string& path);
// Compares actual with testdata/<name>.json structurally (EXPECT, with a readable diff).
void expect_golden(const std::string& name, const kube::Object& actual);

}  // namespace mpijob::testing
