// Which -H hosts are this machine (their ranks start as local processes, the others over ssh),
// and the address the rendezvous store listens on so that every host reaches it.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "korovod/status.h"

namespace korovod::launcher {

struct LocalHost {
  std::string hostname;             // gethostname()
  std::set<std::string> addresses;  // IPv4 addresses of this machine's interfaces
};
LocalHost discover_local_host();

// A name as a numeric IPv4 address (nothing when it does not resolve).
using Resolver = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> resolve_ipv4_address(const std::string& name);

// localhost, this hostname (or its first label), or a name that resolves to one of this
// machine's interface addresses (horovodrun: network.filter_local_addresses). 127.0.0.2 and the
// like are not an interface's address: they count as another host.
bool is_local_host(const std::string& name, const LocalHost& local, const Resolver& resolve);

// The source address this machine uses to reach `remote_address` (no packet is sent).
using RouteFinder = std::function<Result<std::string>(const std::string& remote_address)>;
Result<std::string> source_address_towards(const std::string& remote_address);

// Where the store listens and what the ranks are told: 127.0.0.1 when every rank is local; else
// the IPv4 address of `iface` when given (--network-interface); else this machine's address on
// the route to the first remote host.
struct StoreAddressInputs {
  std::vector<std::string> remote_hosts;  // in host order; empty: a local-only job
  std::string iface;
};
Result<std::string> store_address(const StoreAddressInputs& inputs, const Resolver& resolve,
                                  const RouteFinder& route);

}  // namespace korovod::launcher
