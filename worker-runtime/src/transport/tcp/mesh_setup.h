// Building the sockets of a Mesh once every member knows every member's "address:port": rank
// `me` connects to every lower rank and accepts every higher one; each connection opens with a
// handshake naming the set and the connecting rank. Sockets come back nonblocking.
#pragma once

#include <string>
#include <vector>

#include "transport/tcp/socket.h"

namespace korovod::tcp {

Result<std::vector<Fd>> connect_mesh(const Fd& listener, const std::vector<std::string>& endpoints, int me, int set_id,
                                     const SocketOptions& sock, double timeout_seconds,
                                     const std::vector<int>& global_ranks);

}  // namespace korovod::tcp
