// korovod-agent's command line (CLI11): `serve [flags]` or `rsh [ssh options] HOST COMMAND...`,
// read once, with the environment's defaults (settings.h), into the options of the subcommand.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent_server.h"
#include "korovod/config.h"
#include "rsh_args.h"
#include "rsh_client.h"

namespace korovod::agent {

enum class Subcommand { kServe, kRsh };

struct AgentCommandLine {
  Subcommand subcommand = Subcommand::kServe;
  ServeOptions serve;
  RshRequest rsh;
  RshOptions rsh_options;
  // Set when korovod-agent should stop here with this exit code, already explained: after
  // --help (0), or a usage error (2; for rsh 255, as ssh's).
  std::optional<int> exit_code;
};

// `args` without the program name; `env` gives KOROVOD_AGENT_PORT and
// KOROVOD_AGENT_CONNECT_TIMEOUT.
AgentCommandLine parse_command_line(const std::vector<std::string>& args, const EnvMap& env);

}  // namespace korovod::agent
