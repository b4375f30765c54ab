// RestClient against the real API server: CRUD on core objects and on a CRD installed through
// the API, optimistic concurrency, and server-side apply.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "cluster.h"
#include "kube/api_error.h"

namespace kube::testing {
namespace {

Object config_map(const std::string& name, const Object& data) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}},
          {"data", data}};
}

class RestCrudTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_CLUSTER();
    client_ = make_client();
    ns_ = std::make_unique<TestNamespace>(*client_, "crud");
  }
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
};

TEST_F(RestCrudTest, ConfigMapCreateGetListUpdatePatchDelete) {
  RestClient& c = *client_;
  const std::string ns = ns_->name();
  const Object created = c.create(resources::kConfigMaps, ns, config_map("cm", {{"a", "1"}}));
  EXPECT_EQ(created["data"]["a"], "1");
  EXPECT_FALSE(rv_of(created).empty());

  Object got = c.get(resources::kConfigMaps, ns, "cm");
  EXPECT_EQ(got["metadata"]["uid"], created["metadata"]["uid"]);

  got["data"]["b"] = "2";
  const Object updated = c.update(resources::kConfigMaps, ns, got);
  EXPECT_EQ(updated["data"]["b"], "2");
  EXPECT_NE(rv_of(updated), rv_of(created));

  const Object merged = c.patch(resources::kConfigMaps, ns, "cm", PatchType::Merge,
                                R"({"data":{"c":"3"}})", {});
  EXPECT_EQ(merged["data"]["c"], "3");
  const Object jsonpatched = c.patch(resources::kConfigMaps, ns, "cm", PatchType::JsonPatch,
                                     R"([{"op":"remove","path":"/data/a"}])", {});
  EXPECT_FALSE(jsonpatched["data"].contains("a"));
  const Object strategic = c.patch(resources::kConfigMaps, ns, "cm", PatchType::StrategicMerge,
                                   R"({"metadata":{"labels":{"x":"y"}}})", {});
  EXPECT_EQ(strategic["metadata"]["labels"]["x"], "y");

  ListOptions by_label;
  by_label.label_selector = "x=y";
  const ListResult listed = c.list(resources::kConfigMaps, ns, by_label);
  ASSERT_EQ(listed.items.size(), 1u);
  EXPECT_EQ(listed.items[0]["kind"], "ConfigMap");
  EXPECT_FALSE(listed.resource_version.empty());

  try {
    c.create(resources::kConfigMaps, ns, config_map("cm", {}));
    ADD_FAILURE() << "duplicate create succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_already_exists(e)) << e.what();
  }

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  try {
    c.remove(resources::kConfigMaps, ns, "cm", wrong_uid);
    ADD_FAILURE() << "delete with a wrong uid precondition succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_conflict(e)) << e.what();
  }
  DeleteOptions right_uid;
  right_uid.precondition_uid = created["metadata"]["uid"].get<std::string>();
  c.remove(resources::kConfigMaps, ns, "cm", right_uid);
  try {
    c.get(resources::kConfigMaps, ns, "cm");
    ADD_FAILURE() << "deleted object still readable";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_not_found(e)) << e.what();
  }
}

TEST_F(RestCrudTest, ListPagesWithLimitAndContinue) {
  for (int i = 0; i < 5; ++i)
    client_->create(resources::kConfigMaps, ns_->name(),
                    config_map("page-" + std::to_string(i), {{"i", std::to_string(i)}}));
  ListOptions o;
  o.limit = 2;
  o.label_selector = "";
  size_t ours = 0;
  int pages = 0;
  do {
    const ListResult page = client_->list(resources::kConfigMaps, ns_->name(), o);
    EXPECT_LE(page.items.size(), 2u);
    for (const auto& item : page.items) {
      if (item["metadata"]["name"].get<std::string>().rfind("page-", 0) == 0) ++ours;
    }
    o.continue_token = page.continue_token;
    ++pages;
  } while (!o.continue_token.empty() && pages < 10);
  // Five of ours, plus kube-root-ca.crt once the controller-manager has published it into the
  // new namespace (asynchronously, so it may or may not be there yet): 5 or 6 items, 3 pages.
  EXPECT_EQ(ours, 5u);
  EXPECT_EQ(pages, 3);
}

TEST_F(RestCrudTest, StaleUpdateIsAConflict) {
  const Object v1 = client_->create(resources::kConfigMaps, ns_->name(), config_map("c", {}));
  Object fresh = v1;
  fresh["data"] = {{"k", "fresh"}};
  client_->update(resources::kConfigMaps, ns_->name(), fresh);
  Object stale = v1;
  stale["data"] = {{"k", "stale"}};
  try {
    client_->update(resources::kConfigMaps, ns_->name(), stale);
    ADD_FAILURE() << "stale update succeeded";
  } catch (const ApiError& e) {
    EXPECT_TRUE(is_conflict(e)) << e.what();
    EXPECT_EQ(e.code(), 409);
  }
  EXPECT_EQ(client_->get(resources::kConfigMaps, ns_->name(), "c")["data"]["k"], "fresh");
}

TEST_F(RestCrudTest, PodCreateStatusUpdateAndPatchStatus) {
  const Object pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "p"}}},
      // No scheduler picks it up, so nothing else writes it (which would make our update
      // of the created version a conflict).
      {"spec",
       {{"schedulerName", "korovod-nobody"},
        {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  Object created = client_->create(resources::kPods, ns_->name(), pod);
  EXPECT_EQ(created["status"]["phase"], "Pending");

  created["status"]["phase"] = "Running";
  const Object running = client_->update_status(resources::kPods, ns_->name(), created);
  EXPECT_EQ(running["status"]["phase"], "Running");

  PatchOptions status;
  status.status = true;
  const Object done = client_->patch(resources::kPods, ns_->name(), "p", PatchType::Merge,
                                     R"({"status":{"phase":"Succeeded"}})", status);
  EXPECT_EQ(done["status"]["phase"], "Succeeded");
  // The status subresource ignores spec changes and the main resource ignores status.
  EXPECT_EQ(client_->get(resources::kPods, ns_->name(), "p")["status"]["phase"], "Succeeded");
  DeleteOptions now;
  now.propagation_policy = "Background";
  client_->remove(resources::kPods, ns_->name(), "p", now);
}

TEST_F(RestCrudTest, ServerSideApplyOwnsFieldsConflictsAndForces) {
  const std::string ns = ns_->name();
  const Object desired = config_map("applied", {{"owner", "a"}});
  PatchOptions as_a;
  as_a.field_manager = "manager-a";
  const Object first =
      client_->patch(resources::kConfigMaps, ns, "applied", PatchType::Apply, desired.dump(), as_a);
  EXPECT_EQ(first["data"]["owner"], "a");
  ASSERT_TRUE(first["metadata"].contains("managedFields"));
  EXPECT_EQ(first["metadata"]["managedFields"][0]["manager"], "manager-a");

  PatchOptions as_b;
  as_b.field_manager = "manager-b";
  const std::string by_b = config_map("applied", {{"owner", "b"}}).dump();
  try {
    client_->patch(resources::kConfigMaps, ns, "applied", PatchType::Apply, by_b, as_b);
    ADD_FAILURE() << "conflicting apply without force succeeded";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 409) << e.what();
    EXPECT_NE(e.api_message().find("manager-a"), std::string::npos) << e.what();
  }
  as_b.force = true;
  const Object forced =
      client_->patch(resources::kConfigMaps, ns, "applied", PatchType::Apply, by_b, as_b);
  EXPECT_EQ(forced["data"]["owner"], "b");
}

TEST_F(RestCrudTest, CustomResourceDefinitionAndCustomObjects) {
  const std::string suffix = ns_->name().substr(ns_->name().rfind('-') + 1);
  const std::string group = "it" + suffix + ".korovod.dev";
  const Object crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets." + group}}},
      {"spec",
       {{"group", group},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
        {"versions",
         {{{"name", "v1"},
           {"served", true},
           {"storage", true},
           {"subresources", {{"status", Object::object()}}},
           {"schema",
            {{"openAPIV3Schema",
              {{"type", "object"},
               {"properties",
                {{"spec", {{"type", "object"}, {"properties", {{"size", {{"type", "integer"}}}}}}},
                 {"status",
                  {{"type", "object"}, {"properties", {{"ready", {{"type", "boolean"}}}}}}}}}}}}}}}}}}};
  client_->create(resources::kCustomResourceDefinitions, "", crd);
  const bool established = eventually([&] {
    const Object got = client_->get(resources::kCustomResourceDefinitions, "", "widgets." + group);
    for (const auto& cond : got["status"].value("conditions", Object::array()))
      if (cond["type"] == "Established" && cond["status"] == "True") return true;
    return false;
  });
  ASSERT_TRUE(established);

  const Resource widgets{group, "v1", "widgets", "Widget", true};
  const Object w = {{"apiVersion", group + "/v1"},
                    {"kind", "Widget"},
                    {"metadata", {{"name", "w1"}}},
                    {"spec", {{"size", 3}}}};
  // Discovery of a fresh CRD can lag Established briefly.
  Object created;
  ASSERT_TRUE(eventually([&] {
    try {
      created = client_->create(widgets, ns_->name(), w);
      return true;
    } catch (const ApiError& e) {
      if (!is_not_found(e)) throw;
      return false;
    }
  }));
  EXPECT_EQ(created["spec"]["size"], 3);
  created["spec"]["size"] = 5;
  EXPECT_EQ(client_->update(widgets, ns_->name(), created)["spec"]["size"], 5);
  Object with_status = client_->get(widgets, ns_->name(), "w1");
  with_status["status"] = {{"ready", true}};
  EXPECT_EQ(client_->update_status(widgets, ns_->name(), with_status)["status"]["ready"], true);
  EXPECT_EQ(client_->list(widgets, ns_->name(), {}).items.size(), 1u);
  EXPECT_EQ(client_->list(widgets, "", {}).items.size(), 1u);
  client_->remove(widgets, ns_->name(), "w1", {});
  EXPECT_TRUE(client_->list(widgets, ns_->name(), {}).items.empty());
  client_->remove(resources::kCustomResourceDefinitions, "", "widgets." + group, {});
}

// The operator and the benchmark share one client across threads.
TEST_F(RestCrudTest, SixteenThreadsCreateThroughOneClient) {
  std::vector<std::thread> threads;
  std::atomic<int> created{0};
  std::mutex mu;
  std::vector<std::string> failures;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        try {
          if (name_of(client_->create(resources::kConfigMaps, ns_->name(),
                                      config_map(name, {{"t", std::to_string(t)}}))) == name)
            ++created;
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          failures.push_back(name + ": " + e.what());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(created, 160);
  EXPECT_EQ(client_->list(resources::kConfigMaps, ns_->name(), {}).items.size(), 161u);
}

}  // namespace
}  // namespace kube::testing
