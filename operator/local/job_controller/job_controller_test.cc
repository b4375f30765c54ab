// The stand-in Job controller of local mode: Kubernetes' backoffLimit rules for both restart
// policies, on the in-memory API.
#include "local/job_controller/job_controller.h"

#include <gtest/gtest.h>

#include <string>

#include "kube/memory_client.h"

namespace local {
namespace {

// Job "l" in "default": backoffLimit 1, one container, the given restartPolicy.
void create_job(kube::MemoryClient& client, const std::string& restart_policy) {
  client.create(kube::resources::kJobs, "default",
                {{"metadata", {{"name", "l"}}},
                 {"spec", {{"backoffLimit", 1},
                           {"template", {{"spec", {{"restartPolicy", restart_policy},
                                                   {"containers", {{{"name", "c"}}}}}}}}}}});
}

// OnFailure: Kubernetes fails the Job once the active pod's container restarts reach
// backoffLimit (pastBackoffLimitOnFailure), so backoffLimit 1 means one restart, two runs.
TEST(JobControllerTest, OnFailureRestartsReachingTheLimitFailTheJob) {
  kube::RealClock clock;
  kube::MemoryClient client(clock);
  JobController jobs(client, clock);
  create_job(client, "OnFailure");
  jobs.sync_all();
  auto pods = client.list(kube::resources::kPods, "default", {}).items;
  ASSERT_EQ(pods.size(), 1u);
  auto pod = pods[0];
  pod["status"] = {{"phase", "Running"}, {"containerStatuses", {{{"name", "c"}, {"restartCount", 0}}}}};
  client.update_status(kube::resources::kPods, "default", pod);
  jobs.sync_all();
  EXPECT_FALSE(client.get(kube::resources::kJobs, "default", "l")["status"].contains("conditions"));
  pod = client.list(kube::resources::kPods, "default", {}).items[0];
  pod["status"]["containerStatuses"][0]["restartCount"] = 1;
  client.update_status(kube::resources::kPods, "default", pod);
  jobs.sync_all();
  auto job = client.get(kube::resources::kJobs, "default", "l");
  ASSERT_EQ(job["status"]["conditions"].size(), 1u);
  EXPECT_EQ(job["status"]["conditions"][0]["reason"], "BackoffLimitExceeded");
  EXPECT_EQ(job["status"]["failed"], 1);  // the deleted pod, as the real controller counts it
  EXPECT_TRUE(client.list(kube::resources::kPods, "default", {}).items.empty());  // deleted
}

TEST(JobControllerTest, RetriesUntilBackoffLimitThenFails) {
  kube::RealClock clock;
  kube::MemoryClient client(clock);
  JobController jobs(client, clock);
  create_job(client, "Never");
  for (int attempt = 0; attempt < 2; ++attempt) {
    jobs.sync_all();
    auto pods = client.list(kube::resources::kPods, "default", {}).items;
    ASSERT_EQ(pods.size(), size_t(attempt + 1));
    for (auto& p : pods) {
      EXPECT_EQ(p["metadata"]["labels"]["job-name"], "l");
      p["status"] = {{"phase", "Failed"}};
      client.update_status(kube::resources::kPods, "default", p);
    }
  }
  jobs.sync_all();
  auto job = client.get(kube::resources::kJobs, "default", "l");
  EXPECT_EQ(job["status"]["failed"], 2);
  ASSERT_EQ(job["status"]["conditions"].size(), 1u);
  EXPECT_EQ(job["status"]["conditions"][0]["type"], "Failed");
  EXPECT_EQ(job["status"]["conditions"][0]["reason"], "BackoffLimitExceeded");
  EXPECT_EQ(client.list(kube::resources::kPods, "default", {}).items.size(), 2u);  // no third try
}

}  // namespace
}  // namespace local
