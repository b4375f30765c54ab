#include "transport/tcp/address.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include "transport/tcp/socket.h"

namespace korovod::tcp {
namespace {

std::string ipv4_text(const sockaddr* sa) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  return text;
}

Result<std::string> interface_address(const std::string& iface) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Status::unknown("getifaddrs failed");
  std::string found, names;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (iface == a->ifa_name && found.empty()) found = ipv4_text(a->ifa_addr);
    names += fmt::format("{}{}", names.empty() ? "" : ", ", a->ifa_name);
  }
  freeifaddrs(list);
  if (found.empty()) {
    return Status::invalid_argument(
        fmt::format("network interface {:?} has no IPv4 address (interfaces with one: {})", iface, names));
  }
  return found;
}

// The address the network knows this machine's name by (the operating system's hostname, not
// Env::host: this is a question to the resolver about this network namespace).
std::string hostname_address() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) != 0 || res == nullptr) return "";
  std::string addr = ipv4_text(res->ai_addr);
  freeaddrinfo(res);
  return addr;
}

}  // namespace

Result<std::string> resolve_ipv4(const std::string& host) {
  in_addr parsed{};
  if (inet_pton(AF_INET, host.c_str(), &parsed) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return Status::invalid_argument(fmt::format("cannot resolve {:?} to an IPv4 address", host));
  }
  std::string addr = ipv4_text(res->ai_addr);
  freeaddrinfo(res);
  return addr;
}

Result<std::string> choose_listen_address(const std::string& iface) {
  if (!iface.empty()) return interface_address(iface);
  const std::string addr = hostname_address();
  // Only an address of this machine can be listened on (a stale /etc/hosts entry cannot).
  if (!addr.empty() && listen_on(addr, 0, SocketOptions{0}).is_ok()) return addr;
  return std::string("127.0.0.1");
}

}  // namespace korovod::tcp
