// `korovod-agent rsh`: ssh's place for a launcher (Open MPI's plm_rsh_agent, korovodrun's
// --rsh-agent). Connects to the agent of HOST, retrying a failed name lookup and a refused
// connection until the start timeout (a worker pod's DNS record and its agent appear some seconds
// after the launcher starts), proves the job secret, sends the command, relays stdin to it and
// its stdout / stderr to fd 1 / 2, and returns its exit code. 255 (ssh's code for its own
// failures) when the agent cannot be reached, refuses the secret or the connection breaks.
#pragma once

#include "rsh_args.h"
#include "transport/tcp/auth.h"

namespace korovod::agent {

inline constexpr int kRshFailure = 255;

struct RshOptions {
  double connect_timeout_seconds = 60;  // KOROVOD_AGENT_CONNECT_TIMEOUT
  double handshake_timeout_seconds = 30;
};

int run_rsh(const RshRequest& request, const tcp::JobSecret& secret, const RshOptions& options);

}  // namespace korovod::agent
