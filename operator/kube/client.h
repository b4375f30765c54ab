// The one seam between controllers and a Kubernetes API: kube::Client.
// Two implementations: RestClient (a real API server, rest_client.h) and MemoryClient (an
// in-memory API for unit tests and local mode, memory_client.h). Controllers only see this.
//
// Error model of the operator libraries: exceptions. Expected API failures are kube::ApiError
// (HTTP code + the Kubernetes Status reason/message); use the is_* helpers to test them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kube {

// Objects are kept as JSON so unknown fields round-trip untouched.
using Object = nlohmann::json;

// Which collection a request addresses: group/version/resource (plural) plus kind for bodies.
struct Resource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, e.g. "pods"
  std::string kind;      // e.g. "Pod"
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool operator==(const Resource&) const = default;
};

// Well-known resources (resources.cc).
namespace resources {
extern const Resource kPods, kServices, kConfigMaps, kSecrets, kEvents, kNamespaces, kNodes,
    kServiceAccounts, kJobs, kLeases, kCustomResourceDefinitions, kPriorityClasses;
}  // namespace resources

// A failed API call. code is the HTTP status (0 when no response arrived).
class ApiError : public std::runtime_error {
 public:
  ApiError(int code, std::string reason, std::string message);
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }       // Status.reason, e.g. "NotFound"
  const std::string& api_message() const { return message_; }  // Status.message
  std::optional<std::chrono::seconds> retry_after;             // from Retry-After / details
  std::vector<std::string> fields;  // details.causes[].field: the fields a 422 Invalid rejects

 private:
  int code_;
  std::string reason_;
  std::string message_;
};

bool is_not_found(const ApiError& e);       // 404
bool is_conflict(const ApiError& e);        // 409 reason Conflict (stale resourceVersion)
bool is_already_exists(const ApiError& e);  // 409 reason AlreadyExists
bool is_gone(const ApiError& e);            // 410 (watch resourceVersion too old)
bool is_forbidden(const ApiError& e);       // 403
bool is_unauthorized(const ApiError& e);    // 401
bool is_invalid(const ApiError& e);         // 422

struct ListOptions {
  std::string label_selector;    // "a=b,c!=d,e in (x,y),!f,g"
  std::string field_selector;    // "metadata.name=x" (metadata.name / metadata.namespace)
  int64_t limit = 0;             // 0 = no paging
  std::string continue_token;
  std::string resource_version;  // list: "" = most recent; watch: resume point
  bool allow_watch_bookmarks = true;
  int timeout_seconds = 0;       // watch: server-side timeout, 0 = server default
};

struct ListResult {
  std::vector<Object> items;
  std::string resource_version;  // of the list
  std::string continue_token;    // non-empty: more pages
};

enum class PatchType { Merge, JsonPatch, StrategicMerge, Apply };

struct PatchOptions {
  std::string field_manager;  // required for Apply
  bool force = false;         // Apply: take ownership of conflicting fields
  bool status = false;        // patch the status subresource
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  // 0 deletes at once: what a kubelet sends once a pod's containers are stopped (a pod already
  // being deleted gracefully is not removed by a DELETE without it).
  std::optional<int64_t> grace_period_seconds;
};

struct WatchEvent {
  enum class Type { Added, Modified, Deleted, Bookmark, Error };
  Type type = Type::Added;
  Object object;  // for Error: the Status object
};

// A live watch. next() blocks up to `timeout` for the next event; it returns std::nullopt on
// timeout, and throws ApiError when the stream fails. ended() turns true once the server closed
// the stream (the caller then re-watches from the last resourceVersion it saw).
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual std::optional<WatchEvent> next(std::chrono::milliseconds timeout) = 0;
  virtual bool ended() const = 0;
  virtual void close() = 0;  // thread-safe; unblocks next()
};

class Client {
 public:
  virtual ~Client() = default;
  // ns is ignored for cluster-scoped resources; "" lists across all namespaces.
  virtual Object get(const Resource& r, const std::string& ns, const std::string& name) = 0;
  virtual ListResult list(const Resource& r, const std::string& ns, const ListOptions& opts) = 0;
  // The same request as list(), answered with the page's JSON body as the server sent it, for
  // callers that decode it straight into their own form (the informer's store: no Object per
  // item). nullopt, without a request: this client has no such form (MemoryClient); use list().
  virtual std::optional<std::string> list_raw(const Resource& r, const std::string& ns,
                                              const ListOptions& opts) {
    (void)r, (void)ns, (void)opts;
    return std::nullopt;
  }
  virtual Object create(const Resource& r, const std::string& ns, const Object& obj) = 0;
  // Uses obj.metadata.resourceVersion for optimistic concurrency: stale -> ApiError 409 Conflict.
  virtual Object update(const Resource& r, const std::string& ns, const Object& obj) = 0;
  virtual Object update_status(const Resource& r, const std::string& ns, const Object& obj) = 0;
  virtual Object patch(const Resource& r, const std::string& ns, const std::string& name,
                       PatchType type, const std::string& body, const PatchOptions& opts) = 0;
  virtual void remove(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& opts) = 0;
  virtual std::unique_ptr<WatchStream> watch(const Resource& r, const std::string& ns,
                                             const ListOptions& opts) = 0;
};

}  // namespace kube
