// `korovod-agent rsh`'s arguments, read as ssh reads its own, so that it can stand where a
// launcher runs `ssh [options] HOST COMMAND...`: Open MPI (`plm_rsh_agent`: e.g. `-x` or
// `-o ConnectionAttempts=10` before the host) and korovodrun (`-p PORT HOST SCRIPT`).
#pragma once

#include <string>
#include <vector>

#include "korovod/status.h"

namespace korovod::agent {

struct RshRequest {
  std::string host;
  int port = 0;
  std::string command;  // the words after HOST joined by single spaces, as ssh joins them
};

// Flags (-x, -T, -4, ..., combined as -xT) are skipped; ssh's options that take a value
// (-o -p -l -i -F -E -J -b -c -D -e -L -m -O -Q -R -S -W -w; the value attached or the next
// word) are skipped with it, but -p sets the port. `--` ends the options. `default_port` when
// no -p. An error for a missing value, a bad port, no host or no command.
Result<RshRequest> parse_rsh_args(const std::vector<std::string>& args, int default_port);

}  // namespace korovod::agent
