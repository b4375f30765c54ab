// API-server semantics kept here: a global, monotonically increasing resourceVersion; uid,
// creationTimestamp and generation set on create; generation bumped when anything outside
// metadata/status changes; 404 / 409 AlreadyExists / 409 Conflict (stale resourceVersion;
// update without one is unconditional) / 422 (no name, no generateName); no-op writes do not
// bump the resourceVersion; status changes only through update_status / status patches.
#include "kube/memory_client.h"

#include <cctype>

#include "kube/api_error.h"
#include "kube/json_patch.h"
#include "kube/label_selector.h"
#include "kube/object_meta.h"

namespace kube {

namespace {

std::string resource_key(const Resource& r) { return r.group + "/" + r.resource; }

// The client owns the stream; the hub only holds a weak reference to fan out to it.
class OwnedWatchStream final : public WatchStream {
 public:
  explicit OwnedWatchStream(std::shared_ptr<MemoryWatchStream> s) : s_(std::move(s)) {}
  ~OwnedWatchStream() override { s_->close(); }
  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override {
    return s_->next(timeout);
  }
  bool ended() const override { return s_->ended(); }
  void close() override { s_->close(); }

 private:
  std::shared_ptr<MemoryWatchStream> s_;
};

bool is_valid_object_name(const std::string& n) {
  if (n.empty() || n.size() > 253) return false;
  if (!std::isalnum(static_cast<unsigned char>(n.front())) ||
      !std::isalnum(static_cast<unsigned char>(n.back())))
    return false;
  for (char c : n)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '-' || c == '.'))
      return false;
  return true;
}

// Everything but metadata and status: what a generation counts changes of.
bool spec_changed(const Object& a, const Object& b) {
  Object x = a, y = b;
  for (auto* o : {&x, &y}) {
    o->erase("metadata");
    o->erase("status");
  }
  return x != y;
}

int64_t parse_rv(const std::string& rv) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(rv, &used);
    if (used == rv.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw bad_request_error("invalid resourceVersion \"" + rv + "\"");
}

}  // namespace

const char* verb_name(Verb v) {
  switch (v) {
    case Verb::Get: return "get";
    case Verb::List: return "list";
    case Verb::Create: return "create";
    case Verb::Update: return "update";
    case Verb::UpdateStatus: return "update_status";
    case Verb::Patch: return "patch";
    case Verb::Delete: return "delete";
    case Verb::Watch: return "watch";
  }
  return "unknown";
}

MemoryClient::MemoryClient()
    : owned_clock_(std::make_unique<RealClock>()), clock_(*owned_clock_),
      hub_(Options{}.watch_history), rng_(std::random_device{}()) {}

MemoryClient::MemoryClient(Clock& clock) : MemoryClient(clock, Options{}) {}

MemoryClient::MemoryClient(Clock& clock, Options options)
    : clock_(clock), hub_(options.watch_history), rng_(std::random_device{}()) {}

MemoryClient::~MemoryClient() {
  MutexLock lock(mu_);
  hub_.end_all();
}

void MemoryClient::set_request_observer(std::function<void(const Request&)> observer) {
  MutexLock lock(hooks_mu_);
  observer_ = std::move(observer);
}

void MemoryClient::set_failure_hook(std::function<std::optional<ApiError>(const Request&)> hook) {
  MutexLock lock(hooks_mu_);
  fail_hook_ = std::move(hook);
}

void MemoryClient::fail_next(Verb verb, int times, ApiError error,
                             std::optional<std::string> resource) {
  MutexLock lock(hooks_mu_);
  injected_.push_back({verb, times, std::move(error), std::move(resource)});
}

int64_t MemoryClient::request_count(Verb verb) const {
  MutexLock lock(hooks_mu_);
  auto it = counts_.find(verb);
  return it == counts_.end() ? 0 : it->second;
}

void MemoryClient::before_request(const Request& req) {
  std::function<void(const Request&)> observer;
  std::function<std::optional<ApiError>(const Request&)> hook;
  {
    MutexLock lock(hooks_mu_);
    ++counts_[req.verb];
    observer = observer_;
    hook = fail_hook_;
    for (auto it = injected_.begin(); it != injected_.end(); ++it) {
      if (it->verb != req.verb || (it->resource && *it->resource != req.resource.resource))
        continue;
      ApiError e = it->error;
      if (--it->times <= 0) injected_.erase(it);
      throw e;
    }
  }
  // Called without hooks_mu_ so they may call back into this client.
  if (observer) observer(req);
  if (hook)
    if (auto e = hook(req)) throw *e;
}

std::string MemoryClient::scope_ns(const Resource& r, const std::string& ns,
                                   const Object* obj) const {
  if (!r.namespaced) return "";
  const std::string obj_ns = obj ? namespace_of(*obj) : "";
  if (!ns.empty() && !obj_ns.empty() && ns != obj_ns)
    throw bad_request_error("the namespace of the provided object (" + obj_ns +
                            ") does not match the namespace sent on the request (" + ns + ")");
  const std::string out = ns.empty() ? obj_ns : ns;
  if (out.empty())
    throw bad_request_error("a namespace is required for namespaced resource " + r.resource);
  return out;
}

MemoryClient::Bucket& MemoryClient::bucket_locked(const Resource& r) {
  const std::string k = resource_key(r);
  resources_seen_.try_emplace(k, r);
  return objects_[k];
}

Object* MemoryClient::find_locked(const Resource& r, const std::string& ns,
                                  const std::string& name) {
  Bucket& b = bucket_locked(r);
  auto it = b.find(object_key(ns, name));
  return it == b.end() ? nullptr : &it->second;
}

Object MemoryClient::get(const Resource& r, const std::string& ns, const std::string& name) {
  before_request({Verb::Get, r, ns, name});
  const std::string sns = scope_ns(r, ns, nullptr);
  MutexLock lock(mu_);
  const Object* o = find_locked(r, sns, name);
  if (!o) throw not_found_error(r.resource, name);
  return *o;
}

ListResult MemoryClient::list(const Resource& r, const std::string& ns, const ListOptions& opts) {
  before_request({Verb::List, r, ns, "", opts.resource_version, opts.continue_token});
  LabelSelector labels;
  FieldSelector fields;
  try {
    labels = LabelSelector::parse(opts.label_selector);
    fields = FieldSelector::parse(opts.field_selector);
  } catch (const std::invalid_argument& e) {
    throw bad_request_error(e.what());
  }
  MutexLock lock(mu_);
  ListResult out;
  out.resource_version = std::to_string(rv_);
  std::string after;
  if (!opts.continue_token.empty()) {
    const size_t slash = opts.continue_token.find('/');
    if (slash == std::string::npos) throw bad_request_error("invalid continue token");
    out.resource_version = opts.continue_token.substr(0, slash);
    after = opts.continue_token.substr(slash + 1);
  }
  const Bucket& b = bucket_locked(r);
  const bool all_ns = !r.namespaced || ns.empty();
  for (auto it = after.empty() ? b.begin() : b.upper_bound(after); it != b.end(); ++it) {
    const Object& o = it->second;
    if (!all_ns && namespace_of(o) != ns) continue;
    if (!labels.matches(labels_of(o)) || !fields.matches(o)) continue;
    if (opts.limit > 0 && static_cast<int64_t>(out.items.size()) == opts.limit) {
      out.continue_token = out.resource_version + "/" + object_key(out.items.back());
      break;
    }
    out.items.push_back(o);
  }
  return out;
}

Object MemoryClient::create(const Resource& r, const std::string& ns, const Object& obj) {
  before_request({Verb::Create, r, ns, obj.is_object() ? name_of(obj) : ""});
  if (!obj.is_object()) throw bad_request_error("the object to create must be a JSON object");
  const std::string sns = scope_ns(r, ns, &obj);
  MutexLock lock(mu_);
  return create_locked(r, sns, obj);
}

Object MemoryClient::create_locked(const Resource& r, const std::string& ns, Object obj) {
  Object& meta = obj["metadata"];
  if (!meta.is_object()) meta = Object::object();
  std::string name = meta.value("name", "");
  if (name.empty()) {
    const std::string generate = meta.value("generateName", "");
    if (generate.empty())
      throw invalid_error(r.kind, "", "metadata.name: Required value: name or generateName is required");
    do name = generate + random_suffix_locked();
    while (find_locked(r, ns, name));
  }
  if (!is_valid_object_name(name))
    throw invalid_error(r.kind, name, "metadata.name: Invalid value: \"" + name +
                                          "\": a lowercase RFC 1123 subdomain must consist of "
                                          "lower case alphanumeric characters, '-' or '.'");
  if (find_locked(r, ns, name)) throw already_exists_error(r.resource, name);
  if (!r.kind.empty()) {
    if (!obj.contains("apiVersion")) obj["apiVersion"] = r.api_version();
    if (!obj.contains("kind")) obj["kind"] = r.kind;
  }
  meta["name"] = name;
  if (r.namespaced) meta["namespace"] = ns;
  else meta.erase("namespace");
  for (const char* f : {"deletionTimestamp", "deletionGracePeriodSeconds"}) meta.erase(f);
  meta["uid"] = new_uid_locked();
  meta["creationTimestamp"] = format_time(clock_.now());
  meta["generation"] = 1;
  const int64_t rv = next_rv_locked();
  meta["resourceVersion"] = std::to_string(rv);
  bucket_locked(r)[object_key(ns, name)] = obj;
  hub_.record({rv, resource_key(r), WatchEvent::Type::Added, Object(), obj});
  return obj;
}

Object MemoryClient::update(const Resource& r, const std::string& ns, const Object& obj) {
  return checked_update(Verb::Update, r, ns, obj, false);
}

Object MemoryClient::update_status(const Resource& r, const std::string& ns, const Object& obj) {
  return checked_update(Verb::UpdateStatus, r, ns, obj, true);
}

// update and update_status: the same lookup and optimistic-concurrency check; a uid
// precondition is only honoured by a whole-object update, as on the API server.
Object MemoryClient::checked_update(Verb verb, const Resource& r, const std::string& ns,
                                    const Object& obj, bool status_only) {
  before_request({verb, r, ns, obj.is_object() ? name_of(obj) : ""});
  const std::string sns = scope_ns(r, ns, &obj);
  const std::string name = name_of(obj);
  if (name.empty()) throw invalid_error(r.kind, "", "metadata.name: Required value");
  MutexLock lock(mu_);
  const Object* cur = find_locked(r, sns, name);
  if (!cur) throw not_found_error(r.resource, name);
  const std::string rv = resource_version_of(obj), uid = uid_of(obj);
  if (!rv.empty() && rv != resource_version_of(*cur))
    throw conflict_error(r.resource, name,
                         "the object has been modified; please apply your changes to the latest "
                         "version and try again");
  if (!status_only && !uid.empty() && uid != uid_of(*cur))
    throw conflict_error(r.resource, name, "Precondition failed: UID in precondition: " + uid +
                                               ", UID in object meta: " + uid_of(*cur));
  return store_update_locked(r, *cur, obj, status_only);
}

Object MemoryClient::store_update_locked(const Resource& r, const Object& existing_ref,
                                         Object next, bool status_only) {
  const Object existing = existing_ref;  // the map entry is overwritten below
  Object result;
  if (status_only) {
    result = existing;
    if (next.contains("status")) result["status"] = next["status"];
    else result.erase("status");
  } else {
    result = std::move(next);
    if (!result.is_object()) throw bad_request_error("the object must be a JSON object");
    if (existing.contains("status")) result["status"] = existing["status"];
    else result.erase("status");
    Object& meta = result["metadata"];
    if (!meta.is_object()) meta = Object::object();
    for (const char* f : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
      if (existing["metadata"].contains(f)) meta[f] = existing["metadata"][f];
      else meta.erase(f);
    }
    for (const char* f : {"apiVersion", "kind"})
      if (!result.contains(f) && existing.contains(f)) result[f] = existing[f];
  }
  result["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"];
  if (result == existing) return existing;  // no-op writes keep the resourceVersion
  if (!status_only && spec_changed(existing, result))
    result["metadata"]["generation"] = existing["metadata"].value("generation", 0) + 1;
  const int64_t rv = next_rv_locked();
  result["metadata"]["resourceVersion"] = std::to_string(rv);
  const std::string key = object_key(result);
  bucket_locked(r)[key] = result;
  hub_.record({rv, resource_key(r), WatchEvent::Type::Modified, existing, result});
  const Object finalizers = result["metadata"].value("finalizers", Object::array());
  if (has_deletion_timestamp(result) && finalizers.empty()) erase_locked(r, key);
  return result;
}

Object MemoryClient::patch(const Resource& r, const std::string& ns, const std::string& name,
                           PatchType type, const std::string& body, const PatchOptions& opts) {
  before_request({Verb::Patch, r, ns, name});
  const std::string sns = scope_ns(r, ns, nullptr);
  if (type == PatchType::Apply && opts.field_manager.empty())
    throw ApiError(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: "
                                   "Required value: is required for apply patch");
  MutexLock lock(mu_);
  return patch_locked(r, sns, name, type, body, opts);
}

namespace {

// Server-side-apply-lite: one managedFields entry per (manager, operation), no field sets.
void record_manager(Object& obj, const std::string& manager, const std::string& operation,
                    const std::string& api_version, const std::string& time) {
  Object& fields = obj["metadata"]["managedFields"];
  if (!fields.is_array()) fields = Object::array();
  const Object entry = {{"manager", manager}, {"operation", operation},
                        {"apiVersion", api_version}, {"time", time},
                        {"fieldsType", "FieldsV1"}, {"fieldsV1", Object::object()}};
  for (auto& f : fields)
    if (f.value("manager", "") == manager && f.value("operation", "") == operation) {
      f = entry;
      return;
    }
  fields.push_back(entry);
}

}  // namespace

Object MemoryClient::patch_locked(const Resource& r, const std::string& ns,
                                  const std::string& name, PatchType type,
                                  const std::string& body, const PatchOptions& opts) {
  const Object* cur = find_locked(r, ns, name);
  if (!cur && type == PatchType::Apply) {
    Object obj = apply_patch(Object::object(), type, body);
    const std::string body_name = name_of(obj);
    if (!body_name.empty() && body_name != name)
      throw bad_request_error("the name of the object (" + body_name +
                              ") does not match the name on the URL (" + name + ")");
    obj["metadata"]["name"] = name;
    record_manager(obj, opts.field_manager, "Apply", r.api_version(), format_time(clock_.now()));
    return create_locked(r, ns, std::move(obj));
  }
  if (!cur) throw not_found_error(r.resource, name);
  const Object existing = *cur;
  Object patched = apply_patch(existing, type, body);
  if (!patched.is_object() || !patched["metadata"].is_object())
    throw ApiError(422, "Invalid", "the patch removed the object's metadata");
  const std::string rv = resource_version_of(patched);
  if (!rv.empty() && rv != resource_version_of(existing))
    throw conflict_error(r.resource, name,
                         "the object has been modified; please apply your changes to the latest "
                         "version and try again");
  if (type == PatchType::Apply && patched != existing)
    record_manager(patched, opts.field_manager, "Apply", r.api_version(),
                   format_time(clock_.now()));
  return store_update_locked(r, existing, std::move(patched), opts.status);
}

std::unique_ptr<WatchStream> MemoryClient::watch(const Resource& r, const std::string& ns,
                                                 const ListOptions& opts) {
  before_request({Verb::Watch, r, ns, "", opts.resource_version});
  WatchHub::Filter f;
  try {
    f.labels = LabelSelector::parse(opts.label_selector);
    f.fields = FieldSelector::parse(opts.field_selector);
  } catch (const std::invalid_argument& e) {
    throw bad_request_error(e.what());
  }
  f.resource_key = resource_key(r);
  f.ns = r.namespaced ? ns : "";
  f.bookmarks = opts.allow_watch_bookmarks;
  f.api_version = r.api_version();
  f.kind = r.kind;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (opts.timeout_seconds > 0)
    deadline = clock_.steady_now() + std::chrono::seconds(opts.timeout_seconds);
  auto stream = std::make_shared<MemoryWatchStream>(clock_, deadline);
  const bool from_now = opts.resource_version.empty() || opts.resource_version == "0";
  const int64_t since = from_now ? 0 : parse_rv(opts.resource_version);
  MutexLock lock(mu_);
  std::vector<Object> initial;
  if (from_now) {  // "start at most recent": synthetic Added events for the current state
    for (const auto& [key, o] : bucket_locked(r))
      if ((f.ns.empty() || namespace_of(o) == f.ns) && f.labels.matches(labels_of(o)) &&
          f.fields.matches(o))
        initial.push_back(o);
  }
  hub_.add(stream, std::move(f), from_now ? rv_ : since, initial);
  return std::make_unique<OwnedWatchStream>(std::move(stream));
}

void MemoryClient::end_watches() {
  MutexLock lock(mu_);
  hub_.end_all();
}

void MemoryClient::send_bookmarks() {
  MutexLock lock(mu_);
  hub_.bookmark(rv_);
}

void MemoryClient::set_watch_history(size_t n) {
  MutexLock lock(mu_);
  hub_.set_history_limit(n);
}

int64_t MemoryClient::resource_version() const {
  MutexLock lock(mu_);
  return rv_;
}

std::string MemoryClient::new_uid_locked() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string uid;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) uid += '-';
    uid += kHex[rng_() % 16];
  }
  uid[14] = '4';  // version 4 (random) UUID
  return uid;
}

std::string MemoryClient::random_suffix_locked() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";  // as apiserver's
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlphabet[rng_() % (sizeof kAlphabet - 1)];
  return s;
}

}  // namespace kube
