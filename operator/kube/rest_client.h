// RestClient: kube::Client against a real API server over HTTPS (cpprestsdk + OpenSSL).
//
// cpprestsdk/Boost stay out of this header on purpose (pimpl): including them costs ~8 s of
// compile per file. Thread-safe: any number of threads may call any method concurrently.
//
// Failures are kube::ApiError: the server's Status (code/reason/message), or code 0 when no
// response arrived (reason "ConnectionFailed", or "TLSVerificationFailed" with an
// "x509: ..." message when the server's certificate is not trusted).
//
// Watch streams behave like MemoryClient's: an ERROR event (e.g. 410 Expired for a compacted
// resourceVersion) arrives as a WatchEvent of type Error carrying the Status, and the stream
// then ends; next() throws ApiError only when the connection itself fails mid-stream.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/config.h"

namespace kube {

struct RestClientOptions {
  // Client-side rate limit shared by every request of this client (client-go's defaults).
  double qps = 5;
  int burst = 10;
  // Attempts per request (1 = no retry). Retried: 429 always; 5xx and connection failures
  // for idempotent verbs (GET/PUT/DELETE, PATCH apply), and 5xx with Retry-After for any verb.
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{200};  // doubled per attempt, Retry-After wins
  std::chrono::milliseconds max_backoff{10'000};
  std::chrono::seconds request_timeout{30};  // per attempt, from connect to the last byte
  // Watch: the server-side timeout sent when ListOptions.timeout_seconds is 0. The client
  // gives up on a silent stream a little after it.
  std::chrono::seconds default_watch_timeout{300};
  std::string user_agent;  // "" = "korovod/<version>"
};

// Process-wide settings of the HTTP runtime under every RestClient (cpprestsdk + OpenSSL).
// Optional; when used, call configure_http_runtime() once from main, before the first RestClient
// exists and before other threads start (it may set environment variables). They are not
// RestClientOptions fields because neither can be per client: cpprestsdk has one shared thread
// pool, and it creates every TLS connection's context itself.
struct HttpRuntimeOptions {
  // Threads of cpprestsdk's shared pool (0 = cpprestsdk's default, 40). Requests are
  // asynchronous chains on that pool, so a handful serves many requests in flight; 40 threads
  // only add context switches (4 measured best for 16 creates in flight on 2 cores).
  size_t threads = 0;
  // cpprestsdk loads OpenSSL's default trust store (the whole system CA bundle, ~20 ms of CPU
  // with OpenSSL 3) into every new TLS connection before RestClient's callback replaces it with
  // the kubeconfig's CA. With this set, the default store is made empty for the process
  // (SSL_CERT_FILE/SSL_CERT_DIR), and RestClients whose Config has no CA load the system store
  // themselves from the locations that were in effect before. Affects other users of OpenSSL's
  // default paths in the process, hence opt-in.
  bool skip_default_verify_paths = false;
};
// Throws std::logic_error when called twice, std::runtime_error when cpprestsdk's pool already
// started (a request was made before).
void configure_http_runtime(const HttpRuntimeOptions& options);

// The lines of a followed text body (RestClient::stream_text): next() blocks up to `timeout`
// for the next line (without its newline); nullopt on timeout or once ended(); throws ApiError
// when the stream fails. close() is thread-safe and unblocks next().
class LineStream {
 public:
  virtual ~LineStream() = default;
  virtual std::optional<std::string> next(std::chrono::milliseconds timeout) = 0;
  virtual bool ended() const = 0;
  virtual void close() = 0;
};

class RestClient final : public Client {
 public:
  explicit RestClient(Config config, RestClientOptions options = {});
  RestClient(Config config, RestClientOptions options, Clock& clock);
  ~RestClient() override;
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  Object get(const Resource& r, const std::string& ns, const std::string& name) override;
  ListResult list(const Resource& r, const std::string& ns, const ListOptions& opts) override;
  std::optional<std::string> list_raw(const Resource& r, const std::string& ns,
                                      const ListOptions& opts) override;
  Object create(const Resource& r, const std::string& ns, const Object& obj) override;
  Object update(const Resource& r, const std::string& ns, const Object& obj) override;
  Object update_status(const Resource& r, const std::string& ns, const Object& obj) override;
  Object patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
               const std::string& body, const PatchOptions& opts) override;
  void remove(const Resource& r, const std::string& ns, const std::string& name,
              const DeleteOptions& opts) override;
  std::unique_ptr<WatchStream> watch(const Resource& r, const std::string& ns,
                                     const ListOptions& opts) override;

  // A raw request for paths outside the resource model (e.g. "/version", "/readyz").
  // Returns the parsed JSON body (or the text as a JSON string); throws ApiError on non-2xx.
  Object raw_get(const std::string& path_and_query);
  // The body as text, whatever it is (a pod's log: "/api/v1/namespaces/ns/pods/p/log").
  std::string get_text(const std::string& path_and_query);
  // The body as it streams, line by line (a pod's log with follow=true). No client-side
  // timeout: it ends when the server ends it, or at close().
  std::unique_ptr<LineStream> stream_text(const std::string& path_and_query);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Pure helpers of the REST mapping (exposed for unit tests).
namespace rest {

// "/api/v1/namespaces/ns/pods/name/status" or "/apis/group/version/resource[/name]";
// ns is ignored for cluster-scoped resources and "" lists across namespaces.
std::string resource_path(const Resource& r, const std::string& ns, const std::string& name = "",
                          const std::string& subresource = "");

// The query string ("?a=b&c=d", or "") for list or watch.
std::string list_query(const ListOptions& opts, bool watch);

// Percent-encodes a query component (RFC 3986 unreserved characters pass through).
std::string url_encode(const std::string& s);

// One line of a watch stream ({"type": ..., "object": ...}) as a WatchEvent.
// Throws ApiError (code 0, reason "InvalidWatchEvent") for malformed lines.
WatchEvent parse_watch_event(const std::string& line);

// The Content-Type for a patch type.
std::string patch_content_type(PatchType type);

// Delay before attempt `attempt` (1 = the first retry): Retry-After when given, else
// initial * 2^(attempt-1), both capped at max_backoff.
std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::seconds> retry_after,
                                      const RestClientOptions& options);

// An ApiError for a non-2xx response: its Status body when it is one, else the HTTP code
// with the body text as the message.
ApiError error_from_response(int http_code, const std::string& body);

}  // namespace rest
}  // namespace kube
