#include "kube/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <sstream>
#include <system_error>

namespace kube {
namespace {

constexpr size_t kMaxRequestBytes = 8 << 20;
constexpr int kReadTimeoutSeconds = 5;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

// Reads one request (headers, then Content-Length bytes of body). False on timeout, EOF or
// a malformed request; the connection is then just closed.
bool read_request(int fd, HttpRequest& req) {
  std::string data;
  char buf[16384];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  for (;;) {
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::istringstream head(data.substr(0, header_end));
        std::string line, target, version;
        std::getline(head, line);
        std::istringstream(line) >> req.method >> target >> version;
        if (req.method.empty() || target.empty()) return false;
        const auto q = target.find('?');
        req.path = target.substr(0, q);
        if (q != std::string::npos) req.query = target.substr(q + 1);
        while (std::getline(head, line)) {
          const auto colon = line.find(':');
          if (colon == std::string::npos) continue;
          req.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
        }
        if (const auto cl = req.header("content-length"); !cl.empty()) {
          try {
            content_length = std::stoul(cl);
          } catch (const std::exception&) {
            return false;
          }
        }
      }
    }
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) {
      req.body = data.substr(header_end + 4, content_length);
      return true;
    }
    if (data.size() > kMaxRequestBytes) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.append(buf, size_t(n));
  }
}

std::string render(const HttpResponse& resp) {
  std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason_phrase(resp.status) +
                    "\r\nContent-Type: " + resp.content_type +
                    "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                    "\r\nConnection: close\r\n";
  for (const auto& [k, v] : resp.headers) out += k + ": " + v + "\r\n";
  return out + "\r\n" + resp.body;
}

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpServer::HttpServer(std::string address, uint16_t port)
    : address_(std::move(address)), requested_port_(port) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add_healthz_check(const std::string& name, Check check) {
  MutexLock lock(mu_);
  healthz_.emplace_back(name, std::move(check));
}

void HttpServer::add_readyz_check(const std::string& name, Check check) {
  MutexLock lock(mu_);
  readyz_.emplace_back(name, std::move(check));
}

void HttpServer::set_metrics(std::function<std::string()> render_metrics) {
  MutexLock lock(mu_);
  metrics_ = std::move(render_metrics);
}

void HttpServer::handle(const std::string& path, Handler handler) {
  MutexLock lock(mu_);
  handlers_[path] = std::move(handler);
}

uint16_t HttpServer::start() {
  if (thread_.joinable()) return port_;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string host = address_.empty() ? "0.0.0.0" : address_;
  const std::string service = std::to_string(requested_port_);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw std::system_error(EINVAL, std::generic_category(),
                            "http server address " + host + ": " + gai_strerror(rc));
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    throw_errno("http server socket");
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int bound = ::bind(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (bound != 0 || ::listen(fd, 128) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(),
                            "http server bind " + host + ":" + service);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    ::close(fd);
    throw_errno("http server pipe");
  }
  listen_fd_ = fd;
  thread_ = std::thread([this] { serve(); });
  return port_;
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  const char byte = 0;
  (void)!::write(wake_pipe_[1], &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
  listen_fd_ = wake_pipe_[0] = wake_pipe_[1] = -1;
}

void HttpServer::serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    serve_connection(conn);
    ::close(conn);
  }
}

void HttpServer::serve_connection(int fd) {
  // A client that connects and sends nothing must not hold the server for long.
  timeval tv{kReadTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  HttpRequest req;
  if (!read_request(fd, req)) return;
  HttpResponse resp;
  try {
    resp = dispatch(req);
  } catch (const std::exception& e) {
    resp = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
  }
  send_all(fd, render(resp));
}

HttpResponse HttpServer::dispatch(const HttpRequest& req) {
  MutexLock lock(mu_);
  if (const auto it = handlers_.find(req.path); it != handlers_.end()) {
    const Handler handler = it->second;
    lock.unlock();
    return handler(req);
  }
  const bool read_only = req.method == "GET" || req.method == "HEAD";
  // Runs a copy of the checks, without holding the lock.
  const auto probe = [&](const std::string& name, const std::vector<std::pair<std::string, Check>>& checks) {
    if (!read_only) return HttpResponse{405, "text/plain; charset=utf-8", "method not allowed\n", {}};
    return run_checks(name, checks, req);
  };
  if (req.path == "/healthz" || req.path.starts_with("/healthz/")) {
    const auto checks = healthz_;
    lock.unlock();
    return probe("healthz", checks);
  }
  if (req.path == "/readyz" || req.path.starts_with("/readyz/")) {
    const auto checks = readyz_;
    lock.unlock();
    return probe("readyz", checks);
  }
  if (req.path == "/metrics" && metrics_) {
    const auto metrics = metrics_;
    lock.unlock();
    if (!read_only) return {405, "text/plain; charset=utf-8", "method not allowed\n", {}};
    return {200, "text/plain; version=0.0.4; charset=utf-8", metrics(), {}};
  }
  return {404, "text/plain; charset=utf-8", "404 page not found\n", {}};
}

// Kubernetes' probe format: "ok" when every check passes, else one line per check and 500.
// "/healthz/<name>" runs one check; "?verbose" lists every check even when all pass.
HttpResponse HttpServer::run_checks(const std::string& probe,
                                    const std::vector<std::pair<std::string, Check>>& checks,
                                    const HttpRequest& req) {
  const std::string prefix = "/" + probe + "/";
  const std::string only = req.path.starts_with(prefix) ? req.path.substr(prefix.size()) : "";
  std::string lines;
  bool all_ok = true, found = only.empty();
  for (const auto& [name, check] : checks) {
    if (!only.empty() && name != only) continue;
    found = true;
    CheckResult r;
    try {
      r = check();
    } catch (const std::exception& e) {
      r = CheckResult::failed(e.what());
    }
    all_ok = all_ok && r.ok;
    lines += r.ok ? "[+]" + name + " ok\n" : "[-]" + name + " failed: " + r.message + "\n";
  }
  if (!found) return {404, "text/plain; charset=utf-8", "no check named " + only + "\n", {}};
  const bool verbose = req.query.find("verbose") != std::string::npos;
  if (all_ok) return {200, "text/plain; charset=utf-8", verbose ? lines + probe + " check passed\n" : "ok", {}};
  return {500, "text/plain; charset=utf-8", lines + probe + " check failed\n", {}};
}

}  // namespace kube
