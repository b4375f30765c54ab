// The pure half of the REST client: how Client calls map to URLs, queries, content types and
// back from responses. No cpprestsdk here, so it compiles fast and tests without a server.
#include <algorithm>
#include <cctype>

#include "kube/api_error.h"
#include "kube/rest_client.h"

namespace kube::rest {

std::string url_encode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string resource_path(const Resource& r, const std::string& ns, const std::string& name,
                          const std::string& subresource) {
  std::string path = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) path += "/namespaces/" + url_encode(ns);
  path += "/" + r.resource;
  if (!name.empty()) path += "/" + url_encode(name);
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string list_query(const ListOptions& opts, bool watch) {
  std::string q;
  const auto add = [&q](const std::string& key, const std::string& value) {
    q += (q.empty() ? "?" : "&") + key + "=" + url_encode(value);
  };
  if (watch) add("watch", "true");
  if (!opts.label_selector.empty()) add("labelSelector", opts.label_selector);
  if (!opts.field_selector.empty()) add("fieldSelector", opts.field_selector);
  if (!opts.resource_version.empty()) add("resourceVersion", opts.resource_version);
  if (watch) {
    if (opts.allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  } else {
    // Paging belongs to lists only; a watch has no pages.
    if (opts.limit > 0) add("limit", std::to_string(opts.limit));
    if (!opts.continue_token.empty()) add("continue", opts.continue_token);
  }
  if (opts.timeout_seconds > 0) add("timeoutSeconds", std::to_string(opts.timeout_seconds));
  return q;
}

WatchEvent parse_watch_event(const std::string& line) {
  Object j;
  try {
    j = Object::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(0, "InvalidWatchEvent", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || !j.contains("object"))
    throw ApiError(0, "InvalidWatchEvent", "no type/object in " + line.substr(0, 200));
  const std::string type = j["type"].get<std::string>();
  WatchEvent e;
  if (type == "ADDED") e.type = WatchEvent::Type::Added;
  else if (type == "MODIFIED") e.type = WatchEvent::Type::Modified;
  else if (type == "DELETED") e.type = WatchEvent::Type::Deleted;
  else if (type == "BOOKMARK") e.type = WatchEvent::Type::Bookmark;
  else if (type == "ERROR") e.type = WatchEvent::Type::Error;
  else throw ApiError(0, "InvalidWatchEvent", "unknown event type " + type);
  e.object = std::move(j["object"]);
  return e;
}

std::string patch_content_type(PatchType type) {
  switch (type) {
    case PatchType::Merge: return "application/merge-patch+json";
    case PatchType::JsonPatch: return "application/json-patch+json";
    case PatchType::StrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::Apply: return "application/apply-patch+yaml";  // JSON is valid YAML
  }
  return "application/merge-patch+json";
}

std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::seconds> retry_after,
                                      const RestClientOptions& options) {
  using std::chrono::milliseconds;
  if (retry_after && *retry_after > std::chrono::seconds(0))
    return std::min<milliseconds>(*retry_after, options.max_backoff);
  milliseconds d = options.initial_backoff;
  for (int i = 1; i < attempt && d < options.max_backoff; ++i) d *= 2;
  return std::min(d, options.max_backoff);
}

ApiError error_from_response(int http_code, const std::string& body) {
  Object status;
  try {
    status = Object::parse(body);
  } catch (const nlohmann::json::exception&) {
  }
  if (status.is_object() && status.value("kind", "") == "Status")
    return from_status(http_code, status);
  std::string message = body.substr(0, 500);
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
    message.pop_back();
  return ApiError(http_code, reason_for_code(http_code),
                  message.empty() ? "the server responded with HTTP " + std::to_string(http_code)
                                  : message);
}

}  // namespace kube::rest
