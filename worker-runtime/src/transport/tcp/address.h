// Which local IPv4 address a rank listens on and advertises to its peers.
#pragma once

#include <string>

#include "korovod/status.h"

namespace korovod::tcp {

// `iface` non-empty (KOROVOD_IFACE, HOROVOD_GLOO_IFACE or NCCL_SOCKET_IFNAME): that interface's
// IPv4 address, an error naming the interfaces there are when it has none. Empty: the address
// the hostname resolves to when it is local (bindable), else 127.0.0.1.
Result<std::string> choose_listen_address(const std::string& iface);

// `host` as a numeric IPv4 address (itself when it already is one).
Result<std::string> resolve_ipv4(const std::string& host);

}  // namespace korovod::tcp
