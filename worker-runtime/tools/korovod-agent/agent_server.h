// `korovod-agent serve`: listens, and forks one handler per accepted connection
// (command_session.h), so that the server itself stays single-threaded and a slow or hostile
// client holds up no one else. Handlers are reaped on SIGCHLD. SIGTERM / SIGINT: stop
// accepting, SIGTERM every handler (which SIGTERMs its command's group, SIGKILL after the grace
// period), and return once they are gone (SIGKILL to those left after the grace period and 2 s).
#pragma once

#include <string>

#include "command_session.h"
#include "transport/tcp/auth.h"

namespace korovod::agent {

struct ServeOptions {
  std::string listen = "0.0.0.0";  // numeric IPv4
  int port = 0;                    // from the caller: --port, KOROVOD_AGENT_PORT, 2223
  SessionOptions session;
};

// Runs until SIGTERM / SIGINT: 0 then; 1 when it cannot listen (said on stderr).
int serve(const ServeOptions& options, const tcp::JobSecret& secret);

}  // namespace korovod::agent
