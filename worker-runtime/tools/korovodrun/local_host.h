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
// the route to the first remote host that resolves; else (no host name resolves yet: an elastic
// job's first discovery can list pods before their DNS records exist, or -H names ssh aliases)
// this machine's address on its default route, with a note saying so. Fails only when none of
// these exists. An elastic job whose first discovery listed no host at all (its workers are not
// ready yet) may get remote hosts later: it listens on the default route's address too (or on
// 127.0.0.1, with a note, on a machine without one).
struct StoreAddressInputs {
  std::vector<std::string> remote_hosts;  // in host order; empty: a local-only job
  std::string iface;
  bool hosts_unknown = false;  // elastic: the first discovery listed no host
};
struct StoreAddress {
  std::string address;
  std::string note;  // non-empty when the address is a guess the user should hear about
};
Result<StoreAddress> store_address(const StoreAddressInputs& inputs, const Resolver& resolve, const RouteFinder& route);

}  // namespace korovod::launcher
