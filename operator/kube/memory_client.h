// MemoryClient: kube::Client implemented in memory. The fake for unit tests and the store of
// local mode, so it follows the API server's semantics closely (see memory_client.cc for the
// list). Thread-safe. Any Resource works (CRDs too) without registration; objects are keyed by
// group/resource, so versions of one resource share objects.
//
// Simplifications, by design: a paged list is not a consistent snapshot (later pages show the
// current state); strategic merge patch is a JSON merge patch; server-side apply is "create or
// merge patch" with a minimal managedFields entry; status is kept on create.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/memory_watch.h"
#include "kube/mutex.h"

namespace kube {

enum class Verb { Get, List, Create, Update, UpdateStatus, Patch, Delete, Watch };
const char* verb_name(Verb v);

// What a request addressed; given to the request observer and the failure hook.
struct Request {
  Verb verb;
  Resource resource;
  std::string ns;
  std::string name;  // "" for list/watch, and for create with generateName
  std::string resource_version = {};  // list/watch: the resourceVersion asked for
  std::string continue_token = {};    // list: the page asked for
};

class MemoryClient final : public Client {
 public:
  struct Options {
    size_t watch_history = 10000;  // changes kept for watch resume; older -> 410 Gone
  };
  MemoryClient();  // RealClock, default options
  explicit MemoryClient(Clock& clock);
  MemoryClient(Clock& clock, Options options);
  ~MemoryClient() override;

  Object get(const Resource& r, const std::string& ns, const std::string& name) override;
  ListResult list(const Resource& r, const std::string& ns, const ListOptions& opts) override;
  Object create(const Resource& r, const std::string& ns, const Object& obj) override;
  Object update(const Resource& r, const std::string& ns, const Object& obj) override;
  Object update_status(const Resource& r, const std::string& ns, const Object& obj) override;
  Object patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
               const std::string& body, const PatchOptions& opts) override;
  void remove(const Resource& r, const std::string& ns, const std::string& name,
              const DeleteOptions& opts) override;
  std::unique_ptr<WatchStream> watch(const Resource& r, const std::string& ns,
                                     const ListOptions& opts) override;

  // --- Test and local-mode controls ---
  // Called for every request before it runs (e.g. to count API calls).
  void set_request_observer(std::function<void(const Request&)> observer);
  // Consulted for every request before it runs; a returned error is thrown instead.
  void set_failure_hook(std::function<std::optional<ApiError>(const Request&)> hook);
  // Makes the next `times` requests of `verb` (on `resource` plural only, if given) fail.
  void fail_next(Verb verb, int times, ApiError error,
                 std::optional<std::string> resource = std::nullopt);
  // Requests of `verb` served so far (failed ones included).
  int64_t request_count(Verb verb) const;

  void end_watches();                  // the server closes every open watch stream
  void send_bookmarks();               // a Bookmark at the current resourceVersion
  void set_watch_history(size_t n);    // shrink to make older resourceVersions Gone
  int64_t resource_version() const;    // the latest resourceVersion handed out

 private:
  struct Injected {
    Verb verb;
    int times;
    ApiError error;
    std::optional<std::string> resource;
  };
  using Bucket = std::map<std::string, Object>;  // object_key -> object

  void before_request(const Request& req);
  std::string scope_ns(const Resource& r, const std::string& ns, const Object* obj) const;
  Bucket& bucket_locked(const Resource& r) KOROVOD_REQUIRES(mu_);
  Object* find_locked(const Resource& r, const std::string& ns, const std::string& name) KOROVOD_REQUIRES(mu_);
  Object checked_update(Verb verb, const Resource& r, const std::string& ns, const Object& obj,
                        bool status_only);
  Object create_locked(const Resource& r, const std::string& ns, Object obj) KOROVOD_REQUIRES(mu_);
  Object store_update_locked(const Resource& r, const Object& existing, Object next,
                             bool status_only) KOROVOD_REQUIRES(mu_);
  Object patch_locked(const Resource& r, const std::string& ns, const std::string& name,
                      PatchType type, const std::string& body, const PatchOptions& opts) KOROVOD_REQUIRES(mu_);
  void delete_locked(const Resource& r, const std::string& ns, const std::string& name,
                     const std::string& policy) KOROVOD_REQUIRES(mu_);
  void erase_locked(const Resource& r, const std::string& key) KOROVOD_REQUIRES(mu_);
  void cascade_locked(const std::string& owner_uid, const std::string& policy) KOROVOD_REQUIRES(mu_);
  void orphan_dependents_locked(const std::string& owner_uid) KOROVOD_REQUIRES(mu_);
  int64_t next_rv_locked() KOROVOD_REQUIRES(mu_) { return ++rv_; }
  std::string new_uid_locked() KOROVOD_REQUIRES(mu_);
  std::string random_suffix_locked() KOROVOD_REQUIRES(mu_);

  std::unique_ptr<Clock> owned_clock_;  // set when no clock was injected
  Clock& clock_;                        // constant after construction

  mutable Mutex hooks_mu_;
  std::function<void(const Request&)> observer_ KOROVOD_GUARDED_BY(hooks_mu_);
  std::function<std::optional<ApiError>(const Request&)> fail_hook_ KOROVOD_GUARDED_BY(hooks_mu_);
  std::vector<Injected> injected_ KOROVOD_GUARDED_BY(hooks_mu_);
  std::map<Verb, int64_t> counts_ KOROVOD_GUARDED_BY(hooks_mu_);

  mutable Mutex mu_;
  // Starts at 1, never 0: "0" means "any version" to watch and list, as in Kubernetes.
  int64_t rv_ KOROVOD_GUARDED_BY(mu_) = 1;
  std::map<std::string, Bucket> objects_ KOROVOD_GUARDED_BY(mu_);           // by group/resource
  std::map<std::string, Resource> resources_seen_ KOROVOD_GUARDED_BY(mu_);  // for cascades
  WatchHub hub_ KOROVOD_GUARDED_BY(mu_);
  std::mt19937_64 rng_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace kube
