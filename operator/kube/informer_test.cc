#include "kube/informer.h"

#include <thread>

#include <gtest/gtest.h>

#include "kube/fake_clock.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"

namespace kube {
namespace {

using resources::kPods;
using std::chrono::milliseconds;

Object named(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

// Records handler calls; waits (really, briefly) for the informer thread to deliver them.
class Recorder {
 public:
  void add(const std::string& s) {
    std::lock_guard lock(mu_);
    calls_.push_back(s);
    cv_.notify_all();
  }
  std::vector<std::string> wait_for(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return calls_.size() >= n; });
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> calls_;
};

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() { opts.watcher.ns = "ns"; }
  void wire(Informer& inf) {
    inf.on_add([this](const ObjectEvent& e) { rec.add("add " + std::string(e.name())); });
    inf.on_update([this](const ObjectEvent& a, const ObjectEvent& b) {
      rec.add("update " + std::string(a.name()) + " " + std::string(a.resource_version()) +
              "->" + std::string(b.resource_version()));
    });
    inf.on_delete([this](const ObjectEvent& e) { rec.add("delete " + std::string(e.name())); });
  }
  FakeClock clock;
  MemoryClient client{clock};
  InformerOptions opts;
  Recorder rec;
};

TEST_F(InformerTest, SyncsInitialListAndCallsAdd) {
  client.create(kPods, "ns", named("a"));
  Informer inf(client, kPods, opts, clock);
  wire(inf);
  EXPECT_FALSE(inf.has_synced());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(milliseconds(5000)));
  EXPECT_EQ(inf.store().size(), 1u);
  EXPECT_EQ(rec.wait_for(1), (std::vector<std::string>{"add a"}));
}

TEST_F(InformerTest, FollowsWatchEventsIntoStoreAndHandlers) {
  Informer inf(client, kPods, opts, clock);
  wire(inf);
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(milliseconds(5000)));
  auto a = client.create(kPods, "ns", named("a"));
  const std::string rv1 = resource_version_of(a);
  a["metadata"]["labels"] = {{"x", "y"}};
  a = client.update(kPods, "ns", a);
  client.remove(kPods, "ns", "a", {});
  const auto calls = rec.wait_for(3);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "add a");
  EXPECT_EQ(calls[1], "update a " + rv1 + "->" + resource_version_of(a));
  EXPECT_EQ(calls[2], "delete a");
  EXPECT_EQ(inf.store().size(), 0u);
}

TEST_F(InformerTest, RelistSynthesizesDeletesForVanishedObjects) {
  client.create(kPods, "ns", named("stays"));
  client.create(kPods, "ns", named("goes"));
  Informer inf(client, kPods, opts, clock);
  wire(inf);
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(milliseconds(5000)));
  rec.wait_for(2);
  // Lose the watch, delete while nobody watches, and make the old version unresumable.
  client.set_watch_history(0);
  client.end_watches();
  client.remove(kPods, "ns", "goes", {});
  const auto calls = rec.wait_for(3);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2], "delete goes");
  EXPECT_EQ(inf.store().keys(), (std::vector<std::string>{"ns/stays"}));
}

// Handlers read the key, version and owners from the store's entry; object() decodes the
// object as the store keeps it (managedFields stripped) only when asked; a watch deletion's
// object() is the server's final state.
TEST_F(InformerTest, HandlersGetKeyVersionOwnersAndTheObjectOnRequest) {
  Object pod = named("a");
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n"}, {"uid", "u-node"}},
      {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "j"}, {"uid", "u-job"},
       {"controller", true}}};
  pod["metadata"]["managedFields"] = {{{"manager", "m"}}};
  pod["spec"] = {{"nodeName", "n"}};
  pod = client.create(kPods, "ns", pod);
  auto describe = [](const char* what, const ObjectEvent& e, bool decode) {
    std::string s = std::string(what) + " " + std::string(e.key()) + "@" +
                    std::string(e.resource_version());
    for (const OwnerRef& r : e.owners()) s += " " + std::string(r.kind) + "/" + std::string(r.name);
    if (const auto c = e.controller()) s += " controller=" + std::string(c->uid);
    if (decode) {
      const Object& o = e.object();
      s += " spec=" + o["spec"].dump() + " managedFields=" +
           (o["metadata"].contains("managedFields") ? "kept" : "stripped");
    }
    return s;
  };
  Informer inf(client, kPods, opts, clock);
  inf.on_add([&](const ObjectEvent& e) { rec.add(describe("add", e, true)); });
  inf.on_update([&](const ObjectEvent& a, const ObjectEvent& b) {
    rec.add(describe("update", a, false) + " -> " + describe("", b, true));
  });
  inf.on_delete([&](const ObjectEvent& e) { rec.add(describe("delete", e, true)); });
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(milliseconds(5000)));
  const std::string rv1 = resource_version_of(pod);
  pod["spec"]["nodeName"] = "m";
  pod["metadata"]["ownerReferences"].erase(0);
  pod = client.update(kPods, "ns", pod);
  client.remove(kPods, "ns", "a", {});
  const auto calls = rec.wait_for(3);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "add ns/a@" + rv1 +
                          R"( Node/n Job/j controller=u-job spec={"nodeName":"n"} managedFields=stripped)");
  EXPECT_EQ(calls[1], "update ns/a@" + rv1 + " Node/n Job/j controller=u-job ->  ns/a@" +
                          resource_version_of(pod) +
                          R"( Job/j controller=u-job spec={"nodeName":"m"} managedFields=stripped)");
  // The server's final state (its managedFields too), not the store's.
  EXPECT_EQ(calls[2].rfind("delete ns/a@", 0), 0u) << calls[2];
  EXPECT_NE(calls[2].find(R"( Job/j controller=u-job spec={"nodeName":"m"} managedFields=kept)"),
            std::string::npos)
      << calls[2];
}

TEST_F(InformerTest, ThrowingHandlerDoesNotStopTheInformer) {
  std::vector<std::string> errors;
  std::mutex errors_mu;
  opts.watcher.on_error = [&](const std::string& e) {
    std::lock_guard lock(errors_mu);
    errors.push_back(e);
  };
  Informer inf(client, kPods, opts, clock);
  inf.on_add([](const ObjectEvent&) { throw std::runtime_error("handler bug"); });
  wire(inf);
  inf.start();
  client.create(kPods, "ns", named("a"));
  client.create(kPods, "ns", named("b"));
  EXPECT_EQ(rec.wait_for(2).size(), 2u);
  std::lock_guard lock(errors_mu);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("handler bug"), std::string::npos);
}

TEST_F(InformerTest, StopJoinsAndWaitForSyncGivesUp) {
  client.fail_next(Verb::List, 1000, ApiError(500, "InternalError", "down"));
  Informer inf(client, kPods, opts, clock);
  inf.start();
  std::thread stopper([&] {
    clock.wait_for_waiters(2);  // the watcher's backoff and wait_for_sync
    inf.stop();
  });
  EXPECT_FALSE(inf.wait_for_sync(std::chrono::hours(1)));
  stopper.join();
  EXPECT_FALSE(inf.has_synced());
}

}  // namespace
}  // namespace kube
