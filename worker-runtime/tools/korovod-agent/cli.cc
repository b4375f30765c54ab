#include "cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>

#include "settings.h"

namespace korovod::agent {
namespace {

constexpr int kUsageError = 2;

const char* const kDescription =
    "korovod-agent: runs a launcher's commands on a worker without sshd (docs/agent.md).\n"
    "Every connection proves the job's secret (KOROVOD_JOB_SECRET) both ways.\n";

const char* const kRshDescription =
    "Run COMMAND on HOST's `korovod-agent serve`, as `ssh HOST COMMAND...` would: its stdin, stdout\n"
    "and stderr are relayed, its exit code is rsh's (255: the agent could not be reached, refused this\n"
    "job's secret, or the connection broke).\n"
    "usage: korovod-agent rsh [ssh options] HOST COMMAND...\n"
    "  -p PORT   the agent's port (default KOROVOD_AGENT_PORT, else 2223)\n"
    "  other ssh flags (-x, -T, ...) and options with a value (-o -l -i -F -E -J -b -c -D -e -L -m -O\n"
    "  -Q -R -S -W -w) are accepted and ignored.\n"
    "Environment: KOROVOD_JOB_SECRET (required), KOROVOD_AGENT_PORT, KOROVOD_AGENT_CONNECT_TIMEOUT\n"
    "(seconds to retry the name lookup and the connection, default 60).";

void define_serve(CLI::App& serve, ServeOptions& o, std::optional<int>& port) {
  serve.add_option("--listen", o.listen, "IPv4 address to listen on (default 0.0.0.0)");
  serve.add_option("--port", port, "port (default KOROVOD_AGENT_PORT, else 2223)")->check(CLI::Range(1, 65535));
  serve.add_option("--grace-seconds", o.session.grace_seconds,
                   "seconds from SIGTERM to SIGKILL of a command whose connection is gone (default 5)")
      ->check(CLI::Range(0, 3600));
  serve.add_option("--handshake-timeout", o.session.handshake_timeout_seconds,
                   "seconds a client has for the job-secret handshake and its command (default 10)")
      ->check(CLI::Range(0.001, 3600.0));
}

// The rsh subcommand's words, read as ssh reads its own (rsh_args.h), and its environment.
Status finish_rsh(AgentCommandLine& line, const std::vector<std::string>& words, const EnvMap& env) {
  Result<int> port = port_from(env);
  if (!port.is_ok()) return port.status();
  Result<RshRequest> request = parse_rsh_args(words, *port);
  if (!request.is_ok()) return request.status();
  line.rsh = std::move(*request);
  Result<double> timeout = connect_timeout_from(env);
  if (!timeout.is_ok()) return timeout.status();
  line.rsh_options.connect_timeout_seconds = *timeout;
  return Status::ok();
}

}  // namespace

AgentCommandLine parse_command_line(const std::vector<std::string>& args, const EnvMap& env) {
  AgentCommandLine line;
  CLI::App app{kDescription, "korovod-agent"};
  app.require_subcommand(1);
  CLI::App* serve = app.add_subcommand("serve", "serve this worker's commands to the job's launcher");
  std::optional<int> port;
  define_serve(*serve, line.serve, port);
  CLI::App* rsh = app.add_subcommand("rsh", kRshDescription);
  rsh->prefix_command();  // HOST and everything after it (and ssh's options) go to rsh_args.h
  std::vector<std::string> reversed;  // CLI11 takes a vector in reverse order
  std::copy(args.rbegin(), args.rend(), std::back_inserter(reversed));
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    line.exit_code = code == 0 ? 0 : (rsh->parsed() ? kRshFailure : kUsageError);
    return line;
  }
  Status s;
  if (rsh->parsed()) {
    line.subcommand = Subcommand::kRsh;
    s = finish_rsh(line, rsh->remaining(), env);
  } else {
    Result<int> env_port = port ? Result<int>(*port) : port_from(env);
    s = env_port.is_ok() ? Status::ok() : env_port.status();
    if (s.is_ok()) line.serve.port = *env_port;
  }
  if (!s.is_ok()) {
    fmt::print(stderr, "korovod-agent{}: {}\n", rsh->parsed() ? " rsh" : "", s.message());
    line.exit_code = rsh->parsed() ? kRshFailure : kUsageError;
  }
  return line;
}

}  // namespace korovod::agent
