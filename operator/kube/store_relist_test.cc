// The store's relist from raw list pages (store_relist.cc, json_scan.h) against the Object path
// it replaces: nlohmann's parse of the same text, complete_type_meta, Store::replace.
#include <gtest/gtest.h>

#include "kube/fake_clock.h"
#include "kube/informer.h"
#include "kube/memory_client.h"
#include "kube/object_meta.h"
#include "kube/store.h"

namespace kube {
namespace {

using resources::kConfigMaps;

std::string page(const std::string& items,
                 const std::string& meta = R"({"resourceVersion":"7"})") {
  return R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":)" + meta + R"(,"items":[)" +
         items + "]}";
}

// The Object path: what RestClient::list returns, into Store::replace.
void fill_from_objects(Store& s, const std::vector<std::string>& pages, const Resource& r) {
  std::vector<Object> objects;
  for (const auto& p : pages) {
    Object list = Object::parse(p);
    for (auto& item : list["items"]) {
      complete_type_meta(item, r);
      objects.push_back(std::move(item));
    }
  }
  s.replace(std::move(objects));
}

void fill_from_pages(Store& s, const std::vector<std::string>& pages, const Resource& r) {
  s.begin_relist(r);
  for (const auto& p : pages) s.add_relist_page(p);
  s.commit_relist(true, {});
}

void expect_same(const std::vector<std::string>& pages, const Resource& r = kConfigMaps,
                 StoreOptions options = {}) {
  Store a(options), b(options);
  fill_from_objects(a, pages, r);
  fill_from_pages(b, pages, r);
  EXPECT_EQ(a.keys(), b.keys());
  const auto la = a.list(), lb = b.list();
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_EQ(la[i], lb[i]) << la[i].dump() << "\n" << lb[i].dump();
  // Same entries, byte for byte in size: the cache does not grow.
  EXPECT_EQ(a.approx_bytes(), b.approx_bytes());
}

const char* kItem = R"({"metadata":{"name":"a","namespace":"ns",
  "uid":"0a1b2c3d-4e5f-6789-abcd-ef0123456789","resourceVersion":"41",
  "creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"x","tier":"db"},
  "annotations":{"note":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t","raw":"ü€😀"},
  "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u-1"},
                     {"apiVersion":"v1","kind":"Pod","name":"q","uid":"u-2","controller":true}],
  "managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}],"finalizers":[]},
  "data":{"k":"v","empty":""},"binaryData":{},
  "numbers":[0,127,128,255,256,65535,65536,4294967295,4294967296,18446744073709551615,
             18446744073709551616,-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649,
             -9223372036854775808,-9223372036854775809,-0,1.5,0.1,-2.5e10,1E3,1e-400,3.4e38,1e39],
  "flags":[true,false,null],"nested":{"a":{"b":{"c":[[],{},[{"d":null}]]}}}})";

TEST(StoreRelist, VariedObjectsReadBackAsTheObjectPathGivesThem) {
  std::string wide = R"({"metadata":{"name":"wide","namespace":"ns"},"data":{)";
  for (int i = 0; i < 20; ++i)
    wide += (i ? "," : "") + ("\"k" + std::to_string(i) + "\":" + std::to_string(i));
  wide += R"(},"list":[)";
  for (int i = 0; i < 70000; ++i) wide += i ? ",1" : "1";
  wide += R"(],"s32":")" + std::string(32, 'x') + R"(","s256":")" + std::string(256, 'y') +
          R"(","s70k":")" + std::string(70000, 'z') + "\"}";
  const std::string odd =
      R"({"metadata":{"name":"odd","namespace":"","uid":"NOT-A-UUID","resourceVersion":"3"},)"
      R"("kind":"Other","apiVersion":"example.com/v1"})";
  const std::string typed =
      R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"t","namespace":"ns",)"
      R"("labels":{"a":"b"}},"data":null})";
  expect_same({page(std::string(kItem) + "," + wide), page(odd + "," + typed)});
}

TEST(StoreRelist, StringsWithSpecialBytesAtEveryOffset) {
  // The reader skips plain bytes 8 at a time: put each kind of special byte at every offset.
  std::string items;
  int n = 0;
  const std::vector<std::string> specials = {"\\\"", "\\\\", "\\n",
                                             "\\u00e9", "\xc3\xa9", "\xf0\x9f\x98\x80"};
  for (const std::string& special : specials)
    for (size_t at = 0; at < 20; ++at) {
      const std::string text = std::string(at, 'a') + special + std::string(19 - at, 'b');
      items += (n ? "," : "") + std::string(R"({"metadata":{"name":"s)") + std::to_string(n) +
               R"(","namespace":"ns"},"data":{"v":")" + text + R"("}})";
      ++n;
    }
  expect_same({page(items)});
}

TEST(StoreRelist, OwnersLabelsAndListMetadataAreExtracted) {
  Store s;
  s.begin_relist(kConfigMaps);
  const ListResult meta = s.add_relist_page(
      page(kItem, R"({"resourceVersion":"99","continue":"abc","remainingItemCount":3})"));
  EXPECT_EQ(meta.resource_version, "99");
  EXPECT_EQ(meta.continue_token, "abc");
  EXPECT_TRUE(meta.items.empty());
  s.commit_relist(false, {});
  ASSERT_EQ(s.by_owner("u-1").size(), 1u);
  EXPECT_TRUE(s.by_controller("u-1").empty());
  ASSERT_EQ(s.by_controller("u-2").size(), 1u);
  EXPECT_EQ(s.list("ns", LabelSelector::parse("tier=db")).size(), 1u);
  const Object o = *s.get("ns", "a");
  EXPECT_FALSE(o["metadata"].contains("managedFields"));
  EXPECT_EQ(o["kind"], "ConfigMap");
  EXPECT_EQ(o["apiVersion"], "v1");
  EXPECT_EQ(o["metadata"]["uid"], "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
  EXPECT_EQ(o["metadata"]["annotations"]["note"], "caf\u00e9 \U0001F600 \"q\" \\ / \b\f\n\r\t");
}

TEST(StoreRelist, KeepsManagedFieldsWhenAskedAndClusterScopedKeys) {
  StoreOptions keep;
  keep.strip_managed_fields = false;
  expect_same({page(kItem)}, kConfigMaps, keep);
  expect_same({page(R"({"metadata":{"name":"n1","labels":{"x":"y"}}})")},
              resources::kNamespaces);
}

TEST(StoreRelist, TransformGoesTheObjectWay) {
  StoreOptions t;
  t.transform = [](Object& o) { o["data"] = "replaced"; };
  expect_same({page(kItem)}, kConfigMaps, t);
  Store s(t);
  fill_from_pages(s, {page(kItem)}, kConfigMaps);
  EXPECT_EQ((*s.get("ns", "a"))["data"], "replaced");
}

TEST(StoreRelist, BeginDropsAnUnfinishedRelistAndCommitReportsTheDiff) {
  Store s;
  s.upsert(Object::parse(R"({"metadata":{"name":"old","namespace":"ns","resourceVersion":"1"}})"));
  s.begin_relist(kConfigMaps);
  s.add_relist_page(page(R"({"metadata":{"name":"stale","namespace":"ns"}})"));
  s.begin_relist(kConfigMaps);
  s.add_relist_page(page(R"({"metadata":{"name":"new","namespace":"ns","resourceVersion":"2"}})"));
  const Store::Diff d = s.commit_relist(true, {});
  EXPECT_EQ(s.keys(), std::vector<std::string>{"ns/new"});
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_EQ(d.added[0].name(), "new");
  ASSERT_EQ(d.deleted.size(), 1u);
  EXPECT_EQ(d.deleted[0].name(), "old");
  EXPECT_EQ(d.deleted[0].object(), Object::parse(R"({"metadata":{"name":"old","namespace":"ns","resourceVersion":"1"}})"));
}

std::string error_of(const std::string& body) {
  Store s;
  s.begin_relist(kConfigMaps);
  try {
    s.add_relist_page(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), "InvalidResponse");
    return e.what();
  }
  return "";
}

TEST(StoreRelist, ItemsWithoutMetadataOrNameAreErrorsNamingTheField) {
  EXPECT_NE(error_of(page(R"({"data":{}})")).find("item 0 has no metadata"), std::string::npos);
  EXPECT_NE(error_of(page(R"({"metadata":{"name":"a"}},{"metadata":{"namespace":"x"}})"))
                .find("item 1 has no metadata.name"),
            std::string::npos);
  EXPECT_NE(error_of(page(R"({"metadata":{"name":7}})")).find("metadata.name"), std::string::npos);
  EXPECT_NE(error_of(page("3")).find("item 0 is not an object"), std::string::npos);
  EXPECT_NE(error_of(R"({"items":{}})").find("items is not an array"), std::string::npos);
  for (const char* scalar : {"\"x\"", "null", "1", "true"})
    EXPECT_NE(error_of(std::string(R"({"items":)") + scalar + "}").find("items is not an array"),
              std::string::npos)
        << scalar;
  EXPECT_NE(error_of("[]").find("not a JSON object"), std::string::npos);
}

TEST(StoreRelist, RejectsWhatNlohmannRejects) {
  const std::vector<std::string> bad = {
      "",  "{", R"({"items":[)", R"({"a":1} x)", R"({"a":01})", R"({"a":1.})", R"({"a":-})",
      R"({"a":1e})", R"({"a":tru})", R"({"a":"\x"})", R"({"a":"\ud800"})", R"({"a":"\udc00"})",
      R"({"a":"\u12G4"})", "{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\xaf\"}",
      "{\"a\":\"\xed\xa0\x80\"}", R"({"a":1e400})", R"({"a" 1})", R"({"a":1,})", R"({"a":[1,]})",
      R"({,})", R"({"a":"unterminated)"};
  for (const auto& b : bad) {
    EXPECT_FALSE(nlohmann::json::accept(b)) << b;
    EXPECT_FALSE(error_of(b).empty()) << b;
  }
  // And accepts what it accepts, whitespace included.
  EXPECT_EQ(error_of(" {\n\t\"items\" : [ ] , \"metadata\" : { } }\r\n"), "");
  EXPECT_EQ(error_of("\xEF\xBB\xBF{\"items\":[]}"), "");
  EXPECT_TRUE(nlohmann::json::accept("\xEF\xBB\xBF{\"items\":[]}"));
}

// A client whose lists also come raw, as RestClient's do: the informer then decodes them into
// the store without Objects.
class RawListClient final : public Client {
 public:
  explicit RawListClient(MemoryClient& m) : m_(m) {}
  int raw_lists = 0;
  Object get(const Resource& r, const std::string& ns, const std::string& n) override {
    return m_.get(r, ns, n);
  }
  ListResult list(const Resource& r, const std::string& ns, const ListOptions& o) override {
    return m_.list(r, ns, o);
  }
  std::optional<std::string> list_raw(const Resource& r, const std::string& ns,
                                      const ListOptions& o) override {
    ++raw_lists;
    ListResult l = m_.list(r, ns, o);
    Object body = {{"kind", r.kind + "List"},
                   {"apiVersion", r.api_version()},
                   {"metadata", {{"resourceVersion", l.resource_version}}},
                   {"items", Object::array()}};
    if (!l.continue_token.empty()) body["metadata"]["continue"] = l.continue_token;
    for (auto& item : l.items) {
      item.erase("kind");  // as the API server sends list items of built-in types
      item.erase("apiVersion");
      body["items"].push_back(std::move(item));
    }
    return body.dump();
  }
  Object create(const Resource& r, const std::string& ns, const Object& o) override {
    return m_.create(r, ns, o);
  }
  Object update(const Resource& r, const std::string& ns, const Object& o) override {
    return m_.update(r, ns, o);
  }
  Object update_status(const Resource& r, const std::string& ns, const Object& o) override {
    return m_.update_status(r, ns, o);
  }
  Object patch(const Resource& r, const std::string& ns, const std::string& n, PatchType t,
               const std::string& b, const PatchOptions& o) override {
    return m_.patch(r, ns, n, t, b, o);
  }
  void remove(const Resource& r, const std::string& ns, const std::string& n,
              const DeleteOptions& o) override {
    m_.remove(r, ns, n, o);
  }
  std::unique_ptr<WatchStream> watch(const Resource& r, const std::string& ns,
                                     const ListOptions& o) override {
    return m_.watch(r, ns, o);
  }

 private:
  MemoryClient& m_;
};

TEST(StoreRelist, InformerSyncsThroughRawPagesAsThroughObjects) {
  FakeClock clock;
  MemoryClient mem(clock);
  for (int i = 0; i < 7; ++i)
    mem.create(kConfigMaps, "ns",
               {{"metadata",
                 {{"name", "cm" + std::to_string(i)}, {"labels", {{"i", std::to_string(i)}}}}},
                {"data", {{"k", std::string(i * 10, 'v')}}}});
  RawListClient raw(mem);
  auto run = [&](Client& c) {
    InformerOptions o;
    o.watcher.page_size = 3;  // three pages
    Informer inf(c, kConfigMaps, std::move(o), clock);
    std::vector<std::string> added;
    inf.on_add([&](const ObjectEvent& e) { added.emplace_back(e.name()); });
    inf.start();
    EXPECT_TRUE(inf.wait_for_sync(std::chrono::seconds(5)));
    std::vector<Object> objects = inf.store().list();
    inf.stop();
    EXPECT_EQ(added.size(), 7u);
    return objects;
  };
  const auto via_objects = run(mem);
  const auto via_pages = run(raw);
  EXPECT_EQ(raw.raw_lists, 3);
  ASSERT_EQ(via_pages.size(), 7u);
  EXPECT_EQ(via_objects, via_pages);
}

}  // namespace
}  // namespace kube
