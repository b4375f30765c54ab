#include "fixture.h"

#include <algorithm>
#include <cctype>

namespace optest {

void CrdEnvironment::SetUp() {
  if (kube::testing::cluster_dir().empty()) return;
  install_mpijob_crd();
  install_podgroup_crds();
}

void OperatorTest::SetUp() {
  REQUIRE_CLUSTER();
  client_ = kube::testing::make_client();
  std::string prefix = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                 [](unsigned char ch) { return std::isalnum(ch) ? std::tolower(ch) : '-'; });
  ns_ = std::make_unique<kube::testing::TestNamespace>(*client_, "op-" + prefix.substr(0, 40));
}

void OperatorTest::TearDown() {
  if (op_ && HasFailure()) {
    std::cerr << "---- operator log (" << op_->log_path() << "), last 6000 bytes ----\n";
    const std::string log = op_->log();
    std::cerr << log.substr(log.size() > 6000 ? log.size() - 6000 : 0) << "\n";
  }
  op_.reset();
}

void OperatorTest::start_operator(std::vector<std::string> extra) {
  op_.reset();
  op_ = std::make_unique<OperatorProcess>(operator_args(ns(), std::move(extra)), ns());
}

kube::Object OperatorTest::create(const JobSpec& spec) {
  return client_->create(kMPIJobs, ns(), mpijob(spec));
}

kube::Object OperatorTest::get_job(const std::string& name) {
  return client_->get(kMPIJobs, ns(), name);
}

void OperatorTest::patch_job(const std::string& name, const std::string& merge_patch) {
  client_->patch(kMPIJobs, ns(), name, kube::PatchType::Merge, merge_patch, {});
}

}  // namespace optest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new optest::CrdEnvironment);
  return RUN_ALL_TESTS();
}
