#include "controller/verified_status_client.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace controller {
namespace {

const kube::Resource kJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};

// The connection cut after the request went out: the server applied the status write (or not,
// with apply_lost = false) and the answer never came.
class LosesStatusAnswers final : public kube::Client {
 public:
  explicit LosesStatusAnswers(kube::MemoryClient& inner) : inner_(inner) {}
  bool apply_lost = true;
  int gets_failing = 0;  // the next gets find no API server
  kube::Object update_status(const kube::Resource& r, const std::string& ns,
                             const kube::Object& obj) override {
    if (apply_lost) inner_.update_status(r, ns, obj);
    throw kube::ApiError(0, "ConnectionFailed", "connection reset by peer");
  }
  kube::Object get(const kube::Resource& r, const std::string& ns, const std::string& name) override {
    if (gets_failing > 0) {
      --gets_failing;
      throw kube::ApiError(0, "ConnectionFailed", "connection refused");
    }
    return inner_.get(r, ns, name);
  }
  kube::ListResult list(const kube::Resource& r, const std::string& ns,
                        const kube::ListOptions& o) override { return inner_.list(r, ns, o); }
  kube::Object create(const kube::Resource& r, const std::string& ns, const kube::Object& o) override {
    return inner_.create(r, ns, o);
  }
  kube::Object update(const kube::Resource& r, const std::string& ns, const kube::Object& o) override {
    return inner_.update(r, ns, o);
  }
  kube::Object patch(const kube::Resource& r, const std::string& ns, const std::string& n,
                     kube::PatchType t, const std::string& b, const kube::PatchOptions& o) override {
    return inner_.patch(r, ns, n, t, b, o);
  }
  void remove(const kube::Resource& r, const std::string& ns, const std::string& n,
              const kube::DeleteOptions& o) override { inner_.remove(r, ns, n, o); }
  std::unique_ptr<kube::WatchStream> watch(const kube::Resource& r, const std::string& ns,
                                           const kube::ListOptions& o) override {
    return inner_.watch(r, ns, o);
  }

 private:
  kube::MemoryClient& inner_;
};

class VerifiedStatusClientTest : public ::testing::Test {
 protected:
  VerifiedStatusClientTest() {
    job = memory.create(kJobs, "ns", {{"metadata", {{"name", "pi"}}}, {"spec", kube::Object::object()}});
    job["status"] = {{"conditions", {{{"type", "Succeeded"}, {"status", "True"}}}}};
  }
  // The verifier's pauses run on the fake clock: move it until the call returned.
  void advance_until(const std::atomic<bool>& done) {
    while (!done) {
      clock.advance(std::chrono::milliseconds(500));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  kube::FakeClock clock;
  kube::MemoryClient memory{clock};
  LosesStatusAnswers lossy{memory};
  kube::Object job;
};

TEST_F(VerifiedStatusClientTest, UnansweredWriteThatLandedSucceeds) {
  VerifiedStatusClient c(lossy, clock);
  const kube::Object written = c.update_status(kJobs, "ns", job);
  EXPECT_EQ(written["status"], job["status"]);
  EXPECT_NE(kube::resource_version_of(written), kube::resource_version_of(job));
}

TEST_F(VerifiedStatusClientTest, UnansweredWriteThatDidNotLandThrows) {
  lossy.apply_lost = false;
  VerifiedStatusClient c(lossy, clock);
  EXPECT_THROW(c.update_status(kJobs, "ns", job), kube::ApiError);
}

TEST_F(VerifiedStatusClientTest, ReadsBackOnceTheApiServerIsBack) {
  lossy.gets_failing = 3;
  VerifiedStatusClient c(lossy, clock);
  std::optional<kube::Object> written;
  std::atomic<bool> done{false};
  std::thread t([&] {
    written = c.update_status(kJobs, "ns", job);
    done = true;
  });
  advance_until(done);
  t.join();
  ASSERT_TRUE(written);
  EXPECT_EQ((*written)["status"], job["status"]);
}

TEST_F(VerifiedStatusClientTest, GivesUpWhenTheApiServerStaysAway) {
  lossy.gets_failing = 1000;
  VerifiedStatusClient c(lossy, clock, std::chrono::seconds(5));
  std::exception_ptr error;
  std::atomic<bool> done{false};
  std::thread t([&] {
    try {
      c.update_status(kJobs, "ns", job);
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
  });
  advance_until(done);
  t.join();
  EXPECT_LT(lossy.gets_failing, 1000);
  EXPECT_GT(lossy.gets_failing, 990);  // a few reads over 5 s of backoff, then it gave up
  EXPECT_THROW(std::rethrow_exception(error), kube::ApiError);
}

TEST_F(VerifiedStatusClientTest, AnsweredErrorsPassThrough) {
  memory.fail_next(kube::Verb::UpdateStatus, 1, kube::ApiError(422, "Invalid", "bad status"));
  VerifiedStatusClient c(memory, clock);
  EXPECT_THROW(c.update_status(kJobs, "ns", job), kube::ApiError);
  EXPECT_EQ(memory.request_count(kube::Verb::Get), 0);
}

// The REST client resent a PUT whose first attempt landed: the resend's resourceVersion
// precondition fails on our own write (409). The status is ours: the write counts.
TEST_F(VerifiedStatusClientTest, ConflictWithOurOwnLandedWriteSucceeds) {
  memory.update_status(kJobs, "ns", job);  // the first attempt, whose answer was lost
  memory.fail_next(kube::Verb::UpdateStatus, 1,
                   kube::ApiError(409, "Conflict", "the object has been modified"));
  VerifiedStatusClient c(memory, clock);
  EXPECT_EQ(c.update_status(kJobs, "ns", job)["status"], job["status"]);
}

// Two syncs racing on a stale cache write the same status: the second one's 409 is a real
// conflict (the first one's answer came, and it reported the transition).
TEST_F(VerifiedStatusClientTest, ConflictWithOurOwnAnsweredWriteThrows) {
  VerifiedStatusClient c(memory, clock);
  c.update_status(kJobs, "ns", job);  // answered
  EXPECT_THROW(c.update_status(kJobs, "ns", job), kube::ApiError);  // same status, stale rv
}

// A conflict with someone else's write (a different status) is a real conflict.
TEST_F(VerifiedStatusClientTest, ConflictWithAnotherWriteThrows) {
  kube::Object other = job;
  other["status"] = {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}};
  memory.update_status(kJobs, "ns", other);
  VerifiedStatusClient c(memory, clock);
  EXPECT_THROW(c.update_status(kJobs, "ns", job), kube::ApiError);
}

}  // namespace
}  // namespace controller
