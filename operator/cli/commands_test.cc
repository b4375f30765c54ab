// The verbs against the in-memory API (kube::MemoryClient) and a fake pod log; the real API
// server, kubectl's plugin lookup and a real node: tests/integration/cli/.
#include "cli/commands.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <sstream>

#include "kube/memory_client.h"
#include "mpijob/types.h"

namespace cli {
namespace {

using kube::Object;

// A log of fixed lines; following it delivers them, then calls `at_end` and ends.
class FakeLogs final : public PodLogs {
 public:
  std::vector<std::string> lines;
  std::function<void()> at_end = [] {};
  std::vector<std::string> followed;  // pod names

  std::string read(const std::string&, const std::string&, const std::string&) override {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text;
  }
  std::unique_ptr<kube::LineStream> follow(const std::string&, const std::string& pod, const std::string&) override {
    followed.push_back(pod);
    return std::make_unique<Stream>(lines, at_end);
  }

 private:
  class Stream final : public kube::LineStream {
   public:
    Stream(std::vector<std::string> lines, std::function<void()> at_end)
        : lines_(lines.begin(), lines.end()), at_end_(std::move(at_end)) {}
    std::optional<std::string> next(std::chrono::milliseconds) override {
      if (lines_.empty()) {
        if (!ended_) at_end_();
        ended_ = true;
        return std::nullopt;
      }
      std::string l = lines_.front();
      lines_.pop_front();
      return l;
    }
    bool ended() const override { return ended_; }
    void close() override { ended_ = true; }

   private:
    std::deque<std::string> lines_;
    std::function<void()> at_end_;
    bool ended_ = false;
  };
};

class CommandsTest : public ::testing::Test {
 protected:
  SubmitRequest request(const std::string& name = "digits") {
    SubmitRequest r;
    r.name = name;
    r.ns = "team-a";
    r.workers = 2;
    r.image = "img:1";
    r.command = {"python3", "train.py"};
    return r;
  }
  void set_state(const std::string& name, const std::string& state) {
    Object job = api.get(mpijob::kMPIJobs, "team-a", name);
    job["status"]["conditions"] = {{{"type", state}, {"status", "True"}, {"reason", "R"}, {"message", "done"}}};
    api.update_status(mpijob::kMPIJobs, "team-a", job);
  }
  void add_launcher(const std::string& job, const std::string& phase) {
    api.create(kube::resources::kPods, "team-a",
               {{"metadata", {{"name", job + "-launcher-x"},
                              {"labels", {{"training.kubeflow.org/job-name", job},
                                          {"training.kubeflow.org/job-role", "launcher"}}}}},
                {"spec", {{"containers", {{{"name", "launcher"}}}}}},
                {"status", {{"phase", phase}}}});
  }

  kube::RealClock clock;
  kube::MemoryClient api{clock};
  FakeLogs logs;
  std::atomic<bool> interrupted{false};
  std::ostringstream out, err;
  Io io{out, err};
};

TEST_F(CommandsTest, SubmitCreatesTheJobOnceAndSaysSo) {
  EXPECT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 0);
  EXPECT_EQ(out.str(), "mpijob.kubeflow.org/digits created\n");
  EXPECT_EQ(api.get(mpijob::kMPIJobs, "team-a", "digits")["spec"]["slotsPerWorker"], 1);
  EXPECT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 1);
  EXPECT_NE(err.str().find("mpijob digits already exists in namespace team-a"), std::string::npos) << err.str();
}

TEST_F(CommandsTest, DryRunPrintsAndCreatesNothing) {
  SubmitOptions o;
  o.dry_run = true;
  o.output = Output::kJson;
  EXPECT_EQ(submit(api, logs, clock, request(), o, interrupted, io), 0);
  EXPECT_EQ(Object::parse(out.str()), build_mpijob(request()));
  EXPECT_TRUE(api.list(mpijob::kMPIJobs, "team-a", {}).items.empty());
}

TEST_F(CommandsTest, GetListsDescribesAndSaysWhatIsMissing) {
  ASSERT_EQ(submit(api, logs, clock, request("a"), {}, interrupted, io), 0);
  ASSERT_EQ(submit(api, logs, clock, request("b"), {}, interrupted, io), 0);
  set_state("b", "Running");
  out.str("");
  EXPECT_EQ(get(api, "team-a", std::nullopt, Output::kTable, io), 0);
  EXPECT_EQ(out.str().substr(0, out.str().find('\n')),
            "NAME   STATE     WORKERS   READY   RESTARTS   STEP   SAMPLES/S   LOSS   ETA   AGE");
  EXPECT_NE(out.str().find("\nb      Running   2         0       0          -      -           -      -     "),
            std::string::npos)
      << out.str();
  out.str("");
  EXPECT_EQ(get(api, "team-a", "b", Output::kTable, io), 0);
  EXPECT_NE(out.str().find("State:       Running\n"), std::string::npos) << out.str();
  out.str("");
  EXPECT_EQ(get(api, "team-a", std::nullopt, Output::kName, io), 0);
  EXPECT_EQ(out.str(), "mpijob.kubeflow.org/a\nmpijob.kubeflow.org/b\n");
  EXPECT_EQ(get(api, "team-a", "c", Output::kTable, io), 1);
  EXPECT_EQ(err.str(), "Error from server (NotFound): mpijobs.kubeflow.org \"c\" not found\n");
  err.str("");
  EXPECT_EQ(get(api, "other", std::nullopt, Output::kTable, io), 0);
  EXPECT_EQ(err.str(), "No resources found in other namespace.\n");
}

TEST_F(CommandsTest, TopShowsOnlyJobsNotFinishedAndDeleteRemoves) {
  ASSERT_EQ(submit(api, logs, clock, request("a"), {}, interrupted, io), 0);
  ASSERT_EQ(submit(api, logs, clock, request("b"), {}, interrupted, io), 0);
  set_state("a", "Succeeded");
  set_state("b", "Running");
  out.str("");
  EXPECT_EQ(top(api, "", io), 0);
  EXPECT_EQ(out.str().find("\na "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("team-a      b      Running"), std::string::npos) << out.str();
  out.str("");
  EXPECT_EQ(remove_job(api, "team-a", "b", io), 0);
  EXPECT_EQ(out.str(), "mpijob.kubeflow.org \"b\" deleted\n");
  EXPECT_EQ(remove_job(api, "team-a", "b", io), 1);
  EXPECT_EQ(top(api, "team-a", io), 0);
  EXPECT_NE(err.str().find("No running MPIJobs in team-a namespace."), std::string::npos) << err.str();
}

TEST_F(CommandsTest, LogsOfOneRankAreTheLinesTaggedWithIt) {
  EXPECT_TRUE(line_of_rank("[1,3]<stdout>:loss 0.5", 3));
  EXPECT_TRUE(line_of_rank("[3] loss 0.5", 3));
  EXPECT_TRUE(line_of_rank("[3]<stderr>:warning", 3));
  EXPECT_FALSE(line_of_rank("[1,13]<stdout>:x", 3));
  EXPECT_FALSE(line_of_rank("[3,1]<stdout>:x", 3));
  EXPECT_FALSE(line_of_rank("epoch 3", 3));
  EXPECT_EQ(cli::logs(api, logs, "team-a", "digits", std::nullopt, false, interrupted, io), 1);
  EXPECT_EQ(err.str(), "Error from server (NotFound): mpijobs.kubeflow.org \"digits\" not found\n");
  ASSERT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 0);
  out.str("");
  EXPECT_EQ(cli::logs(api, logs, "team-a", "digits", std::nullopt, false, interrupted, io), 1);  // no launcher yet
  add_launcher("digits", "Running");
  logs.lines = {"[1,0]<stdout>:epoch 1", "[1,1]<stdout>:epoch 1", "done"};
  EXPECT_EQ(cli::logs(api, logs, "team-a", "digits", 1, false, interrupted, io), 0);
  EXPECT_EQ(out.str(), "[1,1]<stdout>:epoch 1\n");
  out.str("");
  EXPECT_EQ(cli::logs(api, logs, "team-a", "digits", std::nullopt, true, interrupted, io), 0);
  EXPECT_EQ(out.str(), "[1,0]<stdout>:epoch 1\n[1,1]<stdout>:epoch 1\ndone\n");
}

TEST_F(CommandsTest, FollowStreamsTheLauncherAndEndsWithTheJobsResult) {
  SubmitRequest r = request();
  ASSERT_EQ(submit(api, logs, clock, r, {}, interrupted, io), 0);
  set_state("digits", "Running");
  add_launcher("digits", "Running");
  // Rank 0's progress lines (docs/progress.md) show as korovod run's progress line.
  logs.lines = {"epoch 1", "korovod-progress {\"step\":45,\"total_steps\":90,\"loss\":0.5}", "epoch 2"};
  logs.at_end = [&] { set_state("digits", "Succeeded"); };
  out.str("");
  FollowOptions o;
  o.poll = std::chrono::milliseconds(10);
  EXPECT_EQ(follow_job(api, logs, clock, "team-a", "digits", o, interrupted, io), 0);
  EXPECT_EQ(out.str(), "epoch 1\nkorovod: progress: step 45/90 (50%), loss 0.5000\nepoch 2\n");
  EXPECT_EQ(logs.followed, (std::vector<std::string>{"digits-launcher-x"}));
  EXPECT_NE(err.str().find("mpijob digits: Succeeded"), std::string::npos) << err.str();

  logs.at_end = [&] { set_state("digits", "Failed"); };
  set_state("digits", "Running");
  api.remove(kube::resources::kPods, "team-a", "digits-launcher-x", {});
  add_launcher("digits", "Running");
  EXPECT_EQ(follow_job(api, logs, clock, "team-a", "digits", o, interrupted, io), 1);
  EXPECT_NE(err.str().find("mpijob digits failed: R: done"), std::string::npos) << err.str();
}

TEST_F(CommandsTest, FollowSaysCreatedAndRunningEvenWhenTheJobPassedThemBetweenTwoPolls) {
  ASSERT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 0);
  // Already finished at the first look: Created and Running are False or old, Succeeded is last.
  Object job = api.get(mpijob::kMPIJobs, "team-a", "digits");
  job["status"]["conditions"] = {{{"type", "Created"}, {"status", "True"}},
                                 {{"type", "Running"}, {"status", "False"}},
                                 {{"type", "Succeeded"}, {"status", "True"}}};
  api.update_status(mpijob::kMPIJobs, "team-a", job);
  err.str("");
  FollowOptions o;
  o.poll = std::chrono::milliseconds(10);
  EXPECT_EQ(follow_job(api, logs, clock, "team-a", "digits", o, interrupted, io), 0);
  EXPECT_EQ(err.str(), "korovod: mpijob digits: Created\nkorovod: mpijob digits: Running\n"
                       "korovod: mpijob digits: Succeeded\n");
}

TEST_F(CommandsTest, InterruptedFollowingLeavesTheJobAndSaysHowToDeleteIt) {
  ASSERT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 0);
  set_state("digits", "Running");
  interrupted = true;
  EXPECT_EQ(follow_job(api, logs, clock, "team-a", "digits", {}, interrupted, io), 130);
  EXPECT_NE(err.str().find("keeps running. Delete it with: kubectl korovod delete digits -n team-a"), std::string::npos)
      << err.str();
  EXPECT_NO_THROW(api.get(mpijob::kMPIJobs, "team-a", "digits"));
}

TEST_F(CommandsTest, FollowGivesUpWhenNoLauncherStarts) {
  ASSERT_EQ(submit(api, logs, clock, request(), {}, interrupted, io), 0);
  FollowOptions o;
  o.poll = std::chrono::milliseconds(10);
  o.launcher_wait = std::chrono::seconds(0);
  add_launcher("digits", "Pending");
  EXPECT_EQ(follow_job(api, logs, clock, "team-a", "digits", o, interrupted, io), 1);
  EXPECT_NE(err.str().find("no launcher of mpijob digits started within 0s"), std::string::npos) << err.str();
  EXPECT_TRUE(logs.followed.empty());
}

}  // namespace
}  // namespace cli
