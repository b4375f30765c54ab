#include "kube/mutex.h"
#include "kube/rest_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl.hpp>
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <pplx/threadpool.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "kube/api_error.h"
#include "kube/object_meta.h"
#include "kube/rate_limiter.h"
#include "kube/rest_watch_stream.h"

#ifndef KOROVOD_VERSION
#define KOROVOD_VERSION "0.0.0-dev"
#endif

namespace kube {
namespace http = web::http;
namespace client = web::http::client;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// The reason OpenSSL gave for the last failed certificate verification, worded like Go's
// crypto/x509 (what kubectl users recognise). cpprestsdk only reports "Error in SSL handshake".
// Shared by the connections of one client; concurrent failures may overwrite each other, which
// only affects the wording of an error that happens anyway.
class TlsDiagnostics {
 public:
  static int verify_and_record(X509_STORE_CTX* ctx, void* self) {
    const int ok = X509_verify_cert(ctx);
    if (ok <= 0) static_cast<TlsDiagnostics*>(self)->record(X509_STORE_CTX_get_error(ctx));
    return ok;
  }
  std::string take() {
    MutexLock lock(mu_);
    return std::exchange(last_, "");
  }

 private:
  void record(int err) {
    std::string msg;
    switch (err) {
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        msg = "x509: certificate signed by unknown authority";
        break;
      case X509_V_ERR_CERT_HAS_EXPIRED:
      case X509_V_ERR_CERT_NOT_YET_VALID:
        msg = "x509: certificate has expired or is not yet valid";
        break;
      case X509_V_OK:  // the chain verified; cpprestsdk's host-name check rejected it
        msg = "x509: certificate is not valid for the server's host name";
        break;
      default:
        msg = std::string("x509: ") + X509_verify_cert_error_string(err);
    }
    MutexLock lock(mu_);
    last_ = msg;
  }

  Mutex mu_;
  std::string last_ KOROVOD_GUARDED_BY(mu_);
};

// The system trust store's locations when configure_http_runtime() emptied OpenSSL's default
// paths (written once, before any client exists; read-only afterwards).
struct SystemTrust {
  std::string file, dir;
};
std::atomic<const SystemTrust*> g_system_trust{nullptr};
std::atomic<bool> g_runtime_configured{false};

std::string default_location(const char* env, const char* builtin) {
  const char* v = std::getenv(env);
  return v != nullptr ? std::string(v) : std::string(builtin);
}

// Loads the configured trust and client identity into each new TLS connection's context.
void configure_tls(boost::asio::ssl::context& ctx, const Config& cfg, TlsDiagnostics* diag) {
  if (!cfg.ca_pem.empty()) {
    // A configured CA replaces the system store, as in client-go.
    SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
    ctx.add_certificate_authority(boost::asio::buffer(cfg.ca_pem));
  } else if (const SystemTrust* sys = g_system_trust.load()) {
    // The default paths were emptied for the process: load the system store here.
    SSL_CTX_load_verify_locations(ctx.native_handle(),
                                  sys->file.empty() ? nullptr : sys->file.c_str(),
                                  sys->dir.empty() ? nullptr : sys->dir.c_str());
    ERR_clear_error();  // a missing file or directory leaves the store smaller, as OpenSSL does
  }
  if (!cfg.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(cfg.client_cert_pem));
    ctx.use_private_key(boost::asio::buffer(cfg.client_key_pem), boost::asio::ssl::context::pem);
  }
  if (diag != nullptr)
    SSL_CTX_set_cert_verify_callback(ctx.native_handle(), &TlsDiagnostics::verify_and_record, diag);
}

}  // namespace

void configure_http_runtime(const HttpRuntimeOptions& options) {
  if (g_runtime_configured.exchange(true))
    throw std::logic_error("kube::configure_http_runtime called twice");
  if (options.threads > 0) crossplat::threadpool::initialize_with_threads(options.threads);
  if (options.skip_default_verify_paths) {
    // Leaked on purpose: connections of any client may read it until the process exits.
    g_system_trust.store(new SystemTrust{
        default_location(X509_get_default_cert_file_env(), X509_get_default_cert_file()),
        default_location(X509_get_default_cert_dir_env(), X509_get_default_cert_dir())});
    ::setenv(X509_get_default_cert_file_env(), "/dev/null", 1);
    ::setenv(X509_get_default_cert_dir_env(), "/nonexistent-korovod-default-cert-dir", 1);
  }
}

namespace {

struct RequestSpec {
  http::method method;
  std::string path_and_query;
  std::string body;
  std::string content_type;
  bool idempotent = true;
};

Object parse_json_body(int status, const std::string& body) {
  if (body.empty()) return Object::object();
  try {
    return Object::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(status, "InvalidResponse",
                   std::string("response is not JSON (") + e.what() + "): " + body.substr(0, 200));
  }
}

std::optional<seconds> retry_after_header(const http::http_headers& headers) {
  const auto it = headers.find("Retry-After");
  if (it == headers.end()) return std::nullopt;
  try {
    return seconds(std::stoi(it->second));
  } catch (const std::exception&) {
    return std::nullopt;  // an HTTP-date; backoff applies
  }
}

std::string object_namespace(const std::string& ns, const Object& obj) {
  if (!ns.empty()) return ns;
  if (obj.contains("metadata") && obj["metadata"].contains("namespace"))
    return obj["metadata"]["namespace"].get<std::string>();
  return "";
}

std::string object_name(const Object& obj) {
  if (!obj.contains("metadata") || !obj["metadata"].contains("name") ||
      !obj["metadata"]["name"].is_string())
    throw ApiError(0, "BadRequest", "object has no metadata.name");
  return obj["metadata"]["name"].get<std::string>();
}

}  // namespace

struct RestClient::Impl {
  Impl(Config cfg, RestClientOptions opts, Clock* clk)
      // An injected clock is not owned (aliasing shared_ptr); a default one is.
      : clock_ptr(clk == nullptr ? std::make_shared<RealClock>()
                                 : std::shared_ptr<Clock>(std::shared_ptr<Clock>(), clk)),
        clock(*clock_ptr),
        config(std::move(cfg)),
        options(std::move(opts)),
        tokens(config, clock),
        limiter(options.qps, options.burst, clock),
        diagnostics(std::make_shared<TlsDiagnostics>()),
        api(make_http_client(options.request_timeout)) {
    if (options.user_agent.empty()) options.user_agent = std::string("korovod/") + KOROVOD_VERSION;
    if (options.max_attempts < 1) options.max_attempts = 1;
    validate_tls();
  }

  // Fails at construction, not on the first request, when the PEMs in the config are bad.
  void validate_tls() const {
    if (config.ca_pem.empty() && config.client_cert_pem.empty()) return;
    try {
      boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
      configure_tls(ctx, config, nullptr);
    } catch (const std::exception& e) {
      throw ConfigError("TLS material of " + config.server + " is not usable: " + e.what());
    }
  }

  // One http_client serves every request (cpprestsdk pools connections and allows concurrent
  // requests on one client); watches get their own, with a timeout that fits a long stream.
  client::http_client make_http_client(std::chrono::seconds timeout) const {
    client::http_client_config hc;
    hc.set_timeout(timeout);
    hc.set_validate_certificates(!config.insecure_skip_tls_verify);
    const Config cfg = config;
    const std::shared_ptr<TlsDiagnostics> diag = diagnostics;
    hc.set_ssl_context_callback(
        [cfg, diag](boost::asio::ssl::context& ctx) { configure_tls(ctx, cfg, diag.get()); });
    return client::http_client(utility::conversions::to_string_t(config.server), hc);
  }

  http::http_request make_request(const RequestSpec& spec) {
    http::http_request req(spec.method);
    req.set_request_uri(utility::conversions::to_string_t(spec.path_and_query));
    auto& h = req.headers();
    h.add("User-Agent", options.user_agent);
    h.add("Accept", "application/json");
    if (const std::string token = tokens.token(); !token.empty())
      h.add("Authorization", "Bearer " + token);
    if (!spec.content_type.empty()) {
      // As a byte buffer: set_body(std::string) hands cpprestsdk a char buffer that it then uses
      // as a byte buffer, a type pun UBSan reports (vptr, scripts/sanitize asan).
      std::vector<uint8_t> bytes(spec.body.begin(), spec.body.end());
      const auto size = static_cast<utility::size64_t>(bytes.size());
      req.set_body(concurrency::streams::bytestream::open_istream(std::move(bytes)), size, spec.content_type);
    }
    return req;
  }

  ApiError transport_error(const std::exception& e) {
    const std::string what = e.what();
    // cpprestsdk says only "Error in SSL handshake"; the verify callback recorded why.
    if (what.find("SSL") != std::string::npos || what.find("handshake") != std::string::npos) {
      const std::string x509 = diagnostics->take();
      return ApiError(0, "TLSVerificationFailed",
                      (x509.empty() ? std::string("TLS handshake failed") : x509) + " (server " +
                          config.server + ": " + what + ")");
    }
    return ApiError(0, "ConnectionFailed", config.server + ": " + what);
  }

  void sleep_for(milliseconds d) {
    Mutex mu;
    std::condition_variable cv;
    MutexLock lock(mu);
    clock.wait_until(lock, cv, clock.steady_now() + d, [] { return false; });
  }

  struct Reply {
    http::http_response response;
    std::string body;  // empty when streaming
  };

  // Sends with rate limiting and bounded retries; returns the first 2xx reply or throws.
  // With `stream`, the 2xx body is left unread for the caller.
  Reply send(const RequestSpec& spec, client::http_client& http, bool stream = false,
             pplx::cancellation_token cancel = pplx::cancellation_token::none()) {
    for (int attempt = 1;; ++attempt) {
      limiter.wait();
      Reply reply;
      try {
        // Headers and body in one continuation chain, so the calling thread blocks (and is woken)
        // once per request, not once for the headers and again for the body.
        reply = http.request(make_request(spec), cancel)
                    .then([stream](http::http_response response) {
                      if (stream && response.status_code() < 300)
                        return pplx::task_from_result(Reply{std::move(response), {}});
                      return response.extract_utf8string(true).then(
                          [response](std::string body) mutable { return Reply{std::move(response), std::move(body)}; });
                    })
                    .get();
      } catch (const std::exception& e) {
        ApiError err = transport_error(e);
        if (!spec.idempotent || attempt >= options.max_attempts ||
            err.reason() == "TLSVerificationFailed" || cancel.is_canceled())
          throw err;
        sleep_for(rest::retry_delay(attempt, std::nullopt, options));
        continue;
      }
      const int code = reply.response.status_code();
      if (code >= 200 && code < 300) return reply;
      ApiError err = rest::error_from_response(code, reply.body);
      if (auto ra = retry_after_header(reply.response.headers())) err.retry_after = ra;
      const bool retryable =
          code == 429 || (code >= 500 && (spec.idempotent || err.retry_after.has_value()));
      if (!retryable || attempt >= options.max_attempts) throw err;
      sleep_for(rest::retry_delay(attempt, err.retry_after, options));
    }
  }

  Object call(const RequestSpec& spec) {
    Reply r = send(spec, api);
    return parse_json_body(r.response.status_code(), r.body);
  }

  // Constant after construction.
  std::shared_ptr<Clock> clock_ptr;  // shared with watch streams, which may outlive us
  Clock& clock;
  Config config;
  RestClientOptions options;

  TokenSource tokens;                          // thread-safe
  TokenBucket limiter;                         // thread-safe
  std::shared_ptr<TlsDiagnostics> diagnostics;  // thread-safe
  client::http_client api;                     // thread-safe for concurrent requests
};

RestClient::RestClient(Config config, RestClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options), nullptr)) {}

RestClient::RestClient(Config config, RestClientOptions options, Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options), &clock)) {}

RestClient::~RestClient() = default;

Object RestClient::get(const Resource& r, const std::string& ns, const std::string& name) {
  Object obj = impl_->call({http::methods::GET, rest::resource_path(r, ns, name), "", "", true});
  complete_type_meta(obj, r);
  return obj;
}

ListResult RestClient::list(const Resource& r, const std::string& ns, const ListOptions& opts) {
  const std::string path = rest::resource_path(r, ns) + rest::list_query(opts, false);
  Object body = impl_->call({http::methods::GET, path, "", "", true});
  ListResult out;
  if (body.contains("items") && body["items"].is_array()) {
    out.items.reserve(body["items"].size());
    for (auto& item : body["items"]) {
      complete_type_meta(item, r);
      out.items.push_back(std::move(item));
    }
  }
  const Object& meta = body.contains("metadata") ? body["metadata"] : Object::object();
  out.resource_version = meta.value("resourceVersion", "");
  out.continue_token = meta.value("continue", "");
  return out;
}

std::optional<std::string> RestClient::list_raw(const Resource& r, const std::string& ns,
                                                const ListOptions& opts) {
  const std::string path = rest::resource_path(r, ns) + rest::list_query(opts, false);
  return std::move(impl_->send({http::methods::GET, path, "", "", true}, impl_->api).body);
}

Object RestClient::create(const Resource& r, const std::string& ns, const Object& obj) {
  const std::string path = rest::resource_path(r, object_namespace(ns, obj));
  // POST is not idempotent: a retry after a lost response could create twice.
  return impl_->call({http::methods::POST, path, obj.dump(), "application/json", false});
}

Object RestClient::update(const Resource& r, const std::string& ns, const Object& obj) {
  const std::string path = rest::resource_path(r, object_namespace(ns, obj), object_name(obj));
  return impl_->call({http::methods::PUT, path, obj.dump(), "application/json", true});
}

Object RestClient::update_status(const Resource& r, const std::string& ns, const Object& obj) {
  const std::string path =
      rest::resource_path(r, object_namespace(ns, obj), object_name(obj), "status");
  return impl_->call({http::methods::PUT, path, obj.dump(), "application/json", true});
}

Object RestClient::patch(const Resource& r, const std::string& ns, const std::string& name,
                         PatchType type, const std::string& body, const PatchOptions& opts) {
  std::string path = rest::resource_path(r, ns, name, opts.status ? "status" : "");
  std::string query;
  if (!opts.field_manager.empty()) query += "&fieldManager=" + rest::url_encode(opts.field_manager);
  if (type == PatchType::Apply && opts.force) query += "&force=true";
  if (!query.empty()) path += "?" + query.substr(1);
  const bool idempotent = type == PatchType::Apply;  // the others may apply twice differently
  return impl_->call(
      {http::methods::PATCH, path, body, rest::patch_content_type(type), idempotent});
}

void RestClient::remove(const Resource& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& opts) {
  Object body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!opts.propagation_policy.empty()) body["propagationPolicy"] = opts.propagation_policy;
  if (opts.precondition_uid) body["preconditions"]["uid"] = *opts.precondition_uid;
  if (opts.precondition_resource_version)
    body["preconditions"]["resourceVersion"] = *opts.precondition_resource_version;
  if (opts.grace_period_seconds) body["gracePeriodSeconds"] = *opts.grace_period_seconds;
  impl_->call({http::methods::DEL, rest::resource_path(r, ns, name), body.dump(),
               "application/json", true});
}

std::unique_ptr<WatchStream> RestClient::watch(const Resource& r, const std::string& ns,
                                               const ListOptions& opts) {
  ListOptions o = opts;
  if (o.timeout_seconds <= 0) o.timeout_seconds = int(impl_->options.default_watch_timeout.count());
  const std::string path = rest::resource_path(r, ns) + rest::list_query(o, true);
  // The client-side timeout is an inactivity timeout in cpprestsdk; leave the server room to
  // end the watch itself.
  client::http_client http = impl_->make_http_client(seconds(o.timeout_seconds + 30));
  pplx::cancellation_token_source cancel;
  Impl::Reply reply =
      impl_->send({http::methods::GET, path, "", "", true}, http, true, cancel.get_token());
  return std::make_unique<rest::RestWatchStream>(std::move(reply.response), std::move(cancel),
                                                 impl_->clock_ptr);
}

std::string RestClient::get_text(const std::string& path_and_query) {
  return impl_->send({http::methods::GET, path_and_query, "", "", true}, impl_->api).body;
}

std::unique_ptr<LineStream> RestClient::stream_text(const std::string& path_and_query) {
  // cpprestsdk's timeout is one of inactivity: a training log may be quiet for hours.
  client::http_client http = impl_->make_http_client(std::chrono::hours(24));
  pplx::cancellation_token_source cancel;
  Impl::Reply reply = impl_->send({http::methods::GET, path_and_query, "", "", true}, http, true, cancel.get_token());
  return std::make_unique<rest::RestTextStream>(std::move(reply.response), std::move(cancel), impl_->clock_ptr);
}

Object RestClient::raw_get(const std::string& path_and_query) {
  Impl::Reply r = impl_->send({http::methods::GET, path_and_query, "", "", true}, impl_->api);
  try {
    return Object::parse(r.body);
  } catch (const nlohmann::json::exception&) {
    return Object(r.body);
  }
}

}  // namespace kube
