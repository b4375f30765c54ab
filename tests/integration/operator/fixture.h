// A gtest fixture per test: its own namespace and its own korovod-operator watching it.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "../kube/cluster.h"
#include "harness.h"
#include "kube/object_meta.h"

namespace optest {

inline const kube::Resource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};

// Installs the CRDs once per test binary.
class CrdEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
};

class OperatorTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Starts (or restarts) the operator for this namespace with extra flags.
  void start_operator(std::vector<std::string> extra = {});
  kube::Object create(const JobSpec& spec);
  kube::Object get_job(const std::string& name);
  // Merge-patches the MPIJob.
  void patch_job(const std::string& name, const std::string& merge_patch);
  std::string ns() const { return ns_->name(); }
  kube::Client& c() { return *client_; }

  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<kube::testing::TestNamespace> ns_;
  std::unique_ptr<OperatorProcess> op_;
};

}  // namespace optest
