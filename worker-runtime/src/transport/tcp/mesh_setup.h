// Building the sockets of a Mesh once every member knows every member's "address:port": rank
// `me` connects to every lower rank and accepts every higher one. Each connection opens with the
// job-secret handshake (auth.h, purpose "mesh"), whose payload names the set and the connecting
// rank. The accepting side holds its new connections in a HandshakeGate while it keeps
// accepting, so connections from outside the job (no proof, a wrong or replayed one, garbage,
// silence) are closed and logged while the members connect. Sockets come back nonblocking.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/handshake_gate.h"
#include "transport/tcp/socket.h"

namespace korovod::tcp {

// What every connection of a job's meshes is set up with.
struct MeshAuth {
  JobSecret secret;  // none: no handshake beyond the set / rank payload
  AuthLog log;       // rejected connections
  double handshake_seconds = kHandshakeTimeoutSeconds;
  // The setup's bounds (connecting, the handshake, waiting for the higher ranks) run on it: the
  // runtime's Env; null: the system's clock.
  std::shared_ptr<const Clock> clock;
};

Result<std::vector<os::Fd>> connect_mesh(const os::Fd& listener, const std::vector<std::string>& endpoints, int me,
                                         int set_id, const SocketOptions& sock, double timeout_seconds,
                                         const std::vector<int>& global_ranks, const MeshAuth& auth);

}  // namespace korovod::tcp
