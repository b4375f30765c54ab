#include "remote_command.h"

#include <fmt/format.h>

#include <sstream>

#include "rank_env.h"

namespace korovod::launcher {

std::string remote_rank_script(const std::vector<std::string>& command, const EnvMap& env, const std::string& cwd,
                               int grace_seconds, bool secret_on_stdin) {
  std::string rank = "env";
  for (const auto& [name, value] : env) {
    if (is_exportable(name)) rank += fmt::format(" {}={}", name, shell_quote(value));
  }
  for (const std::string& word : command) rank += " " + shell_quote(word);
  // $0 of the watcher is the rank's pid, which setsid made its process group id.
  const std::string watcher =
      fmt::format("cat >/dev/null; kill -TERM -$0 2>/dev/null; sleep {}; kill -KILL -$0 2>/dev/null", grace_seconds);
  // `read` takes one line and nothing past it (shells read a pipe byte by byte), so the watcher
  // still sees everything after it. export: the value reaches the rank through the environment,
  // never through an argument list.
  const std::string secret =
      secret_on_stdin ? "IFS= read -r KOROVOD_JOB_SECRET || { echo 'korovodrun: no job secret on stdin' >&2; exit 1; }; "
                        "export KOROVOD_JOB_SECRET; "
                      : "";
  return fmt::format(
      "{}cd {} >/dev/null 2>&1; exec 3<&0 </dev/null; "
      "setsid {} 3<&- & p=$!; "
      "setsid sh -c {} $p <&3 >/dev/null 2>&1 & w=$!; exec 3<&-; "
      "wait $p; rc=$?; kill -KILL -$p -$w 2>/dev/null; exit $rc",
      secret, shell_quote(cwd), rank, shell_quote(watcher));
}

SshOptions ssh_options_for(const LaunchOptions& options, const EnvMap& env) {
  SshOptions ssh;
  ssh.port = options.ssh_port;
  ssh.identity_file = options.ssh_identity_file;
  ssh.connect_timeout = options.start_timeout_seconds;
  std::string agent = options.rsh_agent;
  if (agent.empty()) {
    auto it = env.find("KOROVOD_RSH_AGENT");
    if (it != env.end()) agent = it->second;
  }
  std::istringstream words(agent);
  for (std::string word; words >> word;) ssh.agent.push_back(word);
  return ssh;
}

std::vector<std::string> ssh_command(const std::string& host, const SshOptions& o, const std::string& script) {
  if (!o.agent.empty()) {
    // The agent has its own start timeout (korovod-agent: KOROVOD_AGENT_CONNECT_TIMEOUT) and no key.
    std::vector<std::string> argv = o.agent;
    if (o.port) argv.insert(argv.end(), {"-p", std::to_string(*o.port)});
    argv.push_back(host);
    argv.push_back(script);
    return argv;
  }
  std::vector<std::string> argv{"ssh", "-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no",
                                "-o", "BatchMode=yes"};
  if (o.connect_timeout) argv.insert(argv.end(), {"-o", fmt::format("ConnectTimeout={}", *o.connect_timeout)});
  if (o.port) argv.insert(argv.end(), {"-p", std::to_string(*o.port)});
  if (!o.identity_file.empty()) argv.insert(argv.end(), {"-i", o.identity_file});
  argv.push_back(host);
  argv.push_back(script);
  return argv;
}

}  // namespace korovod::launcher
