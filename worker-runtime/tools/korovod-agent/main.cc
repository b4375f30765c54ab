// korovod-agent: sshd's place in worker pods that run without it, and ssh's for the launcher
// (docs/agent.md, `korovod-agent --help`). Everything but this wiring is in the library.
#include <fmt/format.h>

#include "cli.h"
#include "settings.h"

int main(int argc, char** argv) {
  using namespace korovod::agent;
  const korovod::EnvMap env = korovod::process_environment();
  const AgentCommandLine line = parse_command_line(std::vector<std::string>(argv + 1, argv + argc), env);
  if (line.exit_code) return *line.exit_code;
  const bool rsh = line.subcommand == Subcommand::kRsh;
  korovod::Result<korovod::tcp::JobSecret> secret = job_secret_from(env);
  if (!secret.is_ok()) {
    fmt::print(stderr, "korovod-agent{}: {}\n", rsh ? " rsh" : "", secret.status().message());
    return rsh ? kRshFailure : 1;
  }
  return rsh ? run_rsh(line.rsh, *secret, line.rsh_options) : serve(line.serve, *secret);
}
