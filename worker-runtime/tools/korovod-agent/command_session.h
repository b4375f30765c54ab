// One connection to `korovod-agent serve`, in the handler process forked for it: the job-secret
// handshake, the command frame, then the command run as sshd runs a remote command --
// `/bin/sh -c COMMAND` with the agent's environment and working directory, in a session of its
// own -- with its stdin, stdout and stderr relayed as frames (frame.h) and its exit code sent
// last.
//
// Unlike sshd, the command does not outlive its connection: when the connection closes or
// breaks before the command exits (the launcher died), or the handler gets SIGTERM / SIGINT
// (the agent stops), the command's process group gets SIGTERM, and SIGKILL after the grace
// period. Its stdin is closed then too, so a watcher reading it (korovodrun's remote wrapper)
// sees end of file.
#pragma once

#include <string>

#include "os/fd.h"
#include "transport/tcp/auth.h"

namespace korovod::agent {

struct SessionOptions {
  double handshake_timeout_seconds = 10;  // the handshake and the command frame
  int grace_seconds = 5;                  // SIGTERM to SIGKILL
};

// Serves `conn` (from `peer`, "ip:port") to the end; logs on stderr. `stop_fd`: a signalfd that
// becomes readable when the agent is told to stop. 0 when a command ran, 1 otherwise.
int serve_connection(os::Fd conn, const std::string& peer, const tcp::JobSecret& secret,
                     const SessionOptions& options, int stop_fd);

}  // namespace korovod::agent
