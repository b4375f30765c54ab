// EntryBuilder, the store's one encoder: an Object walked into it and the same object's JSON
// text streamed into it (as a list page's items are) give the same entry, byte for byte; the
// body is what nlohmann's to_msgpack gives for what the header does not hold.
#include "kube/entry_builder.h"

#include <cstring>

#include <gtest/gtest.h>

#include "kube/json_scan.h"
#include "kube/store.h"

namespace kube::store_detail {
namespace {

// The store's TypeMeta check, as Store::is_store_type: the first typed object sets it.
struct TypeMeta {
  std::string kind, api_version;
  bool set = false;
  EntryBuilder::TypeCheck check() {
    return [this](std::string_view k, std::string_view a) {
      if (!set) kind = k, api_version = a, set = true;
      return k == kind && a == api_version;
    };
  }
};

// Everything an entry holds but its block pointer.
std::string bytes_of(const Entry& e) {
  std::string out(reinterpret_cast<const char*>(&e.key_len), sizeof(Entry) - sizeof(e.block));
  out.append(e.data(), e.bytes() - sizeof(Entry));
  return out;
}

EntryPtr streamed(EntryBuilder& b, std::string_view json, std::string_view kind = "",
                  std::string_view api_version = "") {
  b.begin(kind, api_version);
  JsonScanner<EntryBuilder>(json, b).run();
  EXPECT_TRUE(b.done());
  return b.finish();
}

// "uid apiVersion kind name[ c]" for each owner reference, " c" on the controller.
std::vector<std::string> owners_of(const Entry& e) {
  std::vector<std::string> owners;
  e.for_each_owner([&](const OwnerRef& r) {
    owners.push_back(std::string(r.uid) + " " + std::string(r.api_version) + " " +
                     std::string(r.kind) + " " + std::string(r.name) + (r.controller ? " c" : ""));
  });
  return owners;
}

const Object kOwned = Object::parse(R"({"kind":"Pod","apiVersion":"v1",
  "metadata":{"name":"a","namespace":"ns","uid":"0a1b2c3d-4e5f-6789-abcd-ef0123456789",
    "resourceVersion":"41","labels":{"app":"x","tier":"db"},
    "annotations":{"note":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"},
    "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u-1"},
      {"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u-2","controller":true,
       "blockOwnerDeletion":true}],
    "managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]},
  "numbers":[0,127,128,255,256,65535,65536,4294967295,4294967296,18446744073709551615,
    -1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649,-9223372036854775808,
    1.5,0.1,-2.5e10,3.4e38,1e39],
  "flags":[true,false,null],"nested":{"a":{"b":{"c":[[],{},[{"d":null}]]}}}})");

Object wide_object() {
  Object o = {{"metadata", {{"name", "wide"}}}};
  for (int i = 0; i < 20; ++i) o["map16"]["k" + std::to_string(i)] = i;
  o["array32"] = Object::array();
  for (int i = 0; i < 70000; ++i) o["array32"].push_back(i % 3);
  o["s32"] = std::string(32, 'x');
  o["s256"] = std::string(256, 'y');
  o["s70k"] = std::string(70000, 'z');
  return o;
}

TEST(EntryBuilder, AnObjectAndItsJsonTextGiveByteIdenticalEntries) {
  const Object other_type = Object::parse(
      R"({"kind":"Other","apiVersion":"example.com/v1","metadata":{"name":"o","namespace":""}})");
  const Object numeric_meta = Object::parse(R"({"metadata":{"name":"c","resourceVersion":5}})");
  for (bool strip : {true, false}) {
    TypeMeta types_a, types_b;
    EntryBuilder from_objects(strip, types_a.check()), from_text(strip, types_b.check());
    for (const Object& o : {kOwned, wide_object(), other_type, numeric_meta}) {
      const EntryPtr a = from_objects.build(o);
      const EntryPtr b = streamed(from_text, o.dump());  // dump(): keys sorted, as the Object
      EXPECT_EQ(bytes_of(*a), bytes_of(*b)) << o.dump().substr(0, 200);
      EXPECT_EQ(a->decode(types_a.kind, types_a.api_version),
                b->decode(types_b.kind, types_b.api_version));
    }
  }
}

TEST(EntryBuilder, BodyIsToMsgpackOfWhatTheHeaderDoesNotHold) {
  TypeMeta types;
  EntryBuilder b(true, types.check());
  for (const Object& o : {kOwned, wide_object()}) {
    const EntryPtr e = b.build(o);
    Object rest = o;
    rest.erase("kind");  // kOwned's are the store's (the first typed object's)
    rest.erase("apiVersion");
    for (const char* k : {"name", "namespace", "uid", "resourceVersion", "managedFields"})
      rest["metadata"].erase(k);
    const std::vector<uint8_t> want = Object::to_msgpack(rest);
    ASSERT_EQ(e->packed_len, want.size()) << o.dump().substr(0, 200);
    EXPECT_EQ(std::memcmp(e->packed(), want.data(), want.size()), 0) << o.dump().substr(0, 200);
  }
  const EntryPtr wide = b.build(wide_object());
  EXPECT_EQ(wide->flags, kName);
  EXPECT_EQ(wide->decode("", ""), wide_object());
}

TEST(EntryBuilder, HeaderHoldsKeyVersionLabelsOwnersAndUid) {
  TypeMeta types;
  EntryBuilder b(true, types.check());
  const EntryPtr e = b.build(kOwned);
  EXPECT_EQ(e->key(), "ns/a");
  EXPECT_EQ(e->ns(), "ns");
  EXPECT_EQ(e->name(), "a");
  EXPECT_EQ(e->resource_version(), "41");
  EXPECT_EQ(e->label("tier"), "db");
  EXPECT_EQ(owners_of(*e), (std::vector<std::string>{"u-1 v1 Pod p", "u-2 batch/v1 Job j c"}));
  EXPECT_TRUE(e->controlled_by("u-2"));
  EXPECT_FALSE(e->controlled_by("u-1"));
  EXPECT_EQ(e->flags, kName | kNs | kRv | kTyped | kUid);
  Object stripped = kOwned;
  stripped["metadata"].erase("managedFields");
  EXPECT_EQ(e->decode("Pod", "v1"), stripped);
  // An event made from the Object reads the same header without encoding the body.
  const ObjectEvent ev(kOwned);
  EXPECT_EQ(ev.key(), e->key());
  EXPECT_EQ(ev.resource_version(), e->resource_version());
  ASSERT_TRUE(ev.controller());
  EXPECT_EQ(ev.controller()->name, "j");
  EXPECT_EQ(ev.owners().size(), 2u);
  EXPECT_EQ(&ev.object(), &kOwned);
}

TEST(EntryBuilder, HeaderEntryHoldsOnlyKeyVersionAndOwnersAsBuildReadsThem) {
  TypeMeta types;
  EntryBuilder b(true, types.check());
  const EntryPtr whole = b.build(kOwned);
  const EntryPtr head = EntryBuilder::header(kOwned);
  EXPECT_EQ(head->key(), "ns/a");
  EXPECT_EQ(head->ns(), "ns");
  EXPECT_EQ(head->resource_version(), "41");
  EXPECT_EQ(owners_of(*head), owners_of(*whole));
  EXPECT_EQ(head->labels_len, 0u);
  EXPECT_EQ(head->packed_len, 0u);
  EXPECT_EQ(head->flags, 0u);
  // References without a string uid are skipped, fields that are not strings read as empty,
  // and the first controller wins: the same either way.
  const Object odd = Object::parse(R"({"metadata":{"name":"b","namespace":"","ownerReferences":[
    1,{"name":"no-uid"},{"uid":7},{"uid":"u-3","kind":7,"controller":true},
    {"uid":"u-4","name":"n","controller":true}]}})");
  const EntryPtr odd_head = EntryBuilder::header(odd);
  EXPECT_EQ(odd_head->key(), "b");
  EXPECT_EQ(owners_of(*odd_head), (std::vector<std::string>{"u-3    c", "u-4   n"}));
  EXPECT_EQ(owners_of(*odd_head), owners_of(*b.build(odd)));
  // Anything without a metadata object has an empty header.
  for (const Object& o : {Object::array(), Object{{"metadata", "x"}}, Object::object()})
    EXPECT_EQ(EntryBuilder::header(o)->bytes(), sizeof(Entry)) << o.dump();
}

TEST(EntryBuilder, StreamedTextKeepsItsKeyOrderAndDecodesEqual) {
  const std::string text =
      R"({"data":{"z":1,"a":2},"metadata":{"resourceVersion":"3","name":"n","namespace":"ns"}})";
  TypeMeta types;
  EntryBuilder b(true, types.check());
  const EntryPtr from_text = streamed(b, text, "ConfigMap", "v1");
  Object o = Object::parse(text);
  o["kind"] = "ConfigMap";
  o["apiVersion"] = "v1";
  const EntryPtr from_object = b.build(o);
  EXPECT_NE(bytes_of(*from_text), bytes_of(*from_object));  // {"z","a"} against {"a","z"}
  EXPECT_EQ(from_text->bytes(), from_object->bytes());
  EXPECT_EQ(from_text->decode("ConfigMap", "v1"), o);
  EXPECT_EQ(from_object->decode("ConfigMap", "v1"), o);
}

TEST(EntryBuilder, RejectsWhatIsNotAJsonObject) {
  TypeMeta types;
  EntryBuilder b(true, types.check());
  EXPECT_THROW(b.build(Object::array()), std::invalid_argument);
  EXPECT_THROW(b.build(Object{{"metadata", {{"name", "a"}}}, {"bin", Object::binary({1, 2})}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace kube::store_detail
