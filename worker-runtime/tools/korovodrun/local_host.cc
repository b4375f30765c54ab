#include "local_host.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/tcp/address.h"
#include "os/fd.h"

namespace korovod::launcher {
namespace {

std::string to_string(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string first_label(const std::string& name) { return name.substr(0, name.find('.')); }

}  // namespace

LocalHost discover_local_host() {
  LocalHost local;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) local.hostname = name;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
        local.addresses.insert(to_string(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr));
      }
    }
    freeifaddrs(list);
  }
  return local;
}

std::optional<std::string> resolve_ipv4_address(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || !found) return std::nullopt;
  const std::string address = to_string(reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr);
  freeaddrinfo(found);
  return address;
}

bool is_local_host(const std::string& name, const LocalHost& local, const Resolver& resolve) {
  if (name == "localhost" || local.addresses.count(name)) return true;
  if (!local.hostname.empty() && (name == local.hostname || name == first_label(local.hostname))) return true;
  const std::optional<std::string> address = resolve(name);
  return address && local.addresses.count(*address) > 0;
}

Result<std::string> source_address_towards(const std::string& remote_address) {
  // connect() on a UDP socket only picks the route and the source address.
  os::Fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  if (!fd.valid() || inet_pton(AF_INET, remote_address.c_str(), &to.sin_addr) != 1 ||
      connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    return Status::unknown(fmt::format("no route to {}: {}", remote_address, std::strerror(errno)));
  }
  sockaddr_in me{};
  socklen_t len = sizeof me;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&me), &len) != 0) {
    return Status::unknown(fmt::format("getsockname: {}", std::strerror(errno)));
  }
  return to_string(me.sin_addr);
}

Result<StoreAddress> store_address(const StoreAddressInputs& in, const Resolver& resolve, const RouteFinder& route) {
  if (in.remote_hosts.empty() && !in.hosts_unknown) return StoreAddress{"127.0.0.1", ""};
  if (!in.iface.empty()) {
    Result<std::string> a = tcp::choose_listen_address(in.iface);
    if (!a.is_ok()) return Status::invalid_argument(fmt::format("--network-interface {}: {}", in.iface, a.status().message()));
    return StoreAddress{*a, ""};
  }
  std::string unrouted;  // the first resolved host without a route, for the error
  for (const std::string& host : in.remote_hosts) {
    const std::optional<std::string> remote = resolve(host);
    if (!remote) continue;
    Result<std::string> a = route(*remote);
    if (a.is_ok()) return StoreAddress{*a, ""};
    if (unrouted.empty()) unrouted = fmt::format("host {:?} ({}): {}", host, *remote, a.status().message());
  }
  if (!unrouted.empty()) return Status::invalid_argument(unrouted);
  // No name resolves, or there is none yet. 192.0.2.1 (TEST-NET-1) is routed by nothing but a
  // default route.
  Result<std::string> fallback = route("192.0.2.1");
  if (in.remote_hosts.empty()) {
    if (!fallback.is_ok()) {
      return StoreAddress{"127.0.0.1",
                          "the first discovery listed no hosts and this machine has no default route: the rendezvous "
                          "store listens on 127.0.0.1, which only ranks on this machine reach (name the interface "
                          "with --network-interface)"};
    }
    return StoreAddress{*fallback, fmt::format("the first discovery listed no hosts; the rendezvous store listens on "
                                               "{}, this machine's address on its default route, so that hosts found "
                                               "later reach it (choose another with --network-interface)",
                                               *fallback)};
  }
  const std::string names = fmt::format("{}", fmt::join(in.remote_hosts, ", "));
  if (!fallback.is_ok()) {
    return Status::invalid_argument(fmt::format(
        "cannot resolve any of the hosts ({}) to find the address they reach this machine on, and this machine "
        "has no default route; name the interface with --network-interface",
        names));
  }
  return StoreAddress{*fallback, fmt::format("none of the hosts ({}) resolves here; the rendezvous store listens on "
                                             "{}, this machine's address on its default route (choose another with "
                                             "--network-interface)",
                                             names, *fallback)};
}

}  // namespace korovod::launcher
