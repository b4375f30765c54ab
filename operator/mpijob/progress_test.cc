// The progress line -> MPIJob.status.progress (mpijob/progress.h).
#include "mpijob/progress.h"

#include <gtest/gtest.h>

namespace mpijob {
namespace {

TEST(LastProgressLine, TakesTheLastWellFormedLineWhateverItsPrefix) {
  const std::string log =
      "digits: 1438 training samples\n"
      "korovod-progress {\"step\":10,\"total_steps\":540}\n"
      "epoch  1/12: train loss 2.1505\n"
      "[1,0]<stdout>:korovod-progress {\"step\":45,\"total_steps\":540}\r\n"
      "korovod-progress {\"step\":46,\"total_st\n"  // cut by the tail: not a line to trust
      "epoch  2/12: train loss 0.6684\n";
  const auto line = last_progress_line(log);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ((*line)["step"], 45);
}

TEST(LastProgressLine, NoneWithoutAMarkerOrWithOnlyBrokenOnes) {
  EXPECT_FALSE(last_progress_line("").has_value());
  EXPECT_FALSE(last_progress_line("epoch 1\nepoch 2").has_value());
  EXPECT_FALSE(last_progress_line("korovod-progress [1,2]\nkorovod-progress not json\n").has_value());
  EXPECT_TRUE(last_progress_line("korovod-progress {\"step\":1}").has_value());  // no newline at the end
}

TEST(ProgressStatus, KeepsKnownFieldsInCamelCaseWithTheEtaForPeople) {
  const kube::Object line = kube::Object::parse(
      R"({"step":120,"total_steps":540,"steps_per_second":3.5,"samples_per_second":224.0,"loss":0.231,)"
      R"("metrics":{"accuracy":0.93},"elapsed_seconds":41.2,"last_step_time":"2026-12-06T23:20:01Z",)"
      R"("eta_seconds":130.4,"source":"keras"})");
  const auto p = progress_status(line, "pi-launcher-x1");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["step"], 120);
  EXPECT_EQ((*p)["totalSteps"], 540);
  EXPECT_EQ((*p)["stepsPerSecond"], 3.5);
  EXPECT_EQ((*p)["samplesPerSecond"], 224.0);
  EXPECT_EQ((*p)["loss"], 0.231);
  EXPECT_EQ((*p)["metrics"]["accuracy"], 0.93);
  EXPECT_EQ((*p)["elapsedSeconds"], 41.2);
  EXPECT_EQ((*p)["lastStepTime"], "2026-12-06T23:20:01Z");
  EXPECT_EQ((*p)["eta"], "2m10s");
  EXPECT_EQ((*p)["source"], "keras");
  EXPECT_EQ((*p)["launcherPod"], "pi-launcher-x1");
  // Six significant digits: what the printer columns show.
  const auto long_loss = progress_status({{"step", 1}, {"loss", 0.005235182121396065}}, "pod");
  EXPECT_EQ((*long_loss)["loss"], 0.00523518);
}

TEST(ProgressStatus, DropsWhatAScriptMustNotPutIntoTheStatus) {
  kube::Object line = {{"step", 3}, {"loss", nullptr}, {"samples_per_second", -1.0}, {"total_steps", "many"},
                       {"source", std::string(200, 'x')}, {"unknown", 1}};
  kube::Object metrics = kube::Object::object();
  for (int i = 0; i < 40; ++i) metrics["m" + std::to_string(i)] = i;
  metrics[std::string(100, 'n')] = 1.0;
  metrics["text"] = "high";
  line["metrics"] = metrics;
  const auto p = progress_status(line, "pod");
  ASSERT_TRUE(p.has_value());
  for (const char* gone : {"loss", "samplesPerSecond", "totalSteps", "source", "unknown", "eta"}) {
    EXPECT_FALSE(p->contains(gone)) << gone;
  }
  EXPECT_EQ((*p)["metrics"].size(), kMaxMetrics);
  EXPECT_FALSE(progress_status({{"loss", 1.0}}, "pod").has_value());  // no step: nothing to show
  EXPECT_FALSE(progress_status({{"step", -2}}, "pod").has_value());
  EXPECT_FALSE(progress_status({{"step", 2.5}}, "pod").has_value());
}

TEST(FormatEta, HoursMinutesSeconds) {
  EXPECT_EQ(format_eta(0.4), "0s");
  EXPECT_EQ(format_eta(45), "45s");
  EXPECT_EQ(format_eta(130.4), "2m10s");
  EXPECT_EQ(format_eta(3605), "1h0m5s");
  EXPECT_EQ(format_eta(-3), "0s");
}

TEST(ProgressSummary, OneLineWithWhatIsKnown) {
  kube::Object p = {{"step", 120}, {"totalSteps", 540}, {"samplesPerSecond", 3020.4}, {"loss", 0.231},
                    {"eta", "2m10s"}};
  EXPECT_EQ(progress_summary(p), "step 120/540 (22%), 3020 samples/s, loss 0.2310, ETA 2m10s");
  EXPECT_EQ(progress_summary({{"step", 7}, {"stepsPerSecond", 2.5}}), "step 7, 2.50 steps/s");
  EXPECT_EQ(progress_summary({{"step", 7}, {"metrics", {{"accuracy", 0.9312}}}}), "step 7, accuracy 0.9312");
  EXPECT_EQ(progress_summary(kube::Object::object()), "");
}

}  // namespace
}  // namespace mpijob
