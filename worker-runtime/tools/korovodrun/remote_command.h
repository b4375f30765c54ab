// A rank on another host: `ssh host '<wrapper>'`, as horovodrun's gloo path starts it
// (gloo_run.py, util/remote.py), with the environment on the remote command line.
//
// Ending it: ssh without a pty does not end the remote command when the connection closes, so
// the remote side runs the rank under a small POSIX sh wrapper. The rank runs in a process group
// of its own (setsid); a watcher reads the session's stdin, which korovodrun holds open and never
// writes. When korovodrun closes it (ending the job), or ssh or korovodrun die, the watcher sees
// end of file and sends SIGTERM to the rank's group, then SIGKILL after the grace period. The
// wrapper exits with the rank's exit code (128 + signal when killed), which ssh passes on.
// Chosen over `ssh -tt`, which would merge the rank's stderr into its stdout and turn "\n" into
// "\r\n". Needs `setsid` (util-linux) on the remote host.
//
// The job secret (KOROVOD_JOB_SECRET) never goes on the remote command line, where `ps` on
// either host and ssh's logs would show it: korovodrun writes it as the first line of the
// session's stdin, and the wrapper reads that line into the rank's environment before it starts
// the rank (and before the watcher takes over stdin).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "korovod/config.h"
#include "launch_options.h"

namespace korovod::launcher {

struct SshOptions {
  std::optional<int> port;             // -p
  std::string identity_file;           // -i
  std::optional<int> connect_timeout;  // seconds (--start-timeout)
  // --rsh-agent, else KOROVOD_RSH_AGENT, split on spaces (e.g. "korovod-agent rsh"): runs in
  // ssh's place; empty: ssh.
  std::vector<std::string> agent;
};

// The SshOptions of korovodrun's flags; `env` (korovodrun's) gives KOROVOD_RSH_AGENT when
// --rsh-agent is not given.
SshOptions ssh_options_for(const LaunchOptions& options, const EnvMap& env);

// The command line for the remote login shell: cd to `cwd` (as horovodrun, failure ignored),
// then the wrapper above running `env NAME=VALUE... command...` (exportable variables only).
// secret_on_stdin: first read KOROVOD_JOB_SECRET from stdin's first line (exit 1 without one).
std::string remote_rank_script(const std::vector<std::string>& command, const EnvMap& env, const std::string& cwd,
                               int grace_seconds, bool secret_on_stdin = false);

// ssh -o PasswordAuthentication=no -o StrictHostKeyChecking=no -o BatchMode=yes
//     [-o ConnectTimeout=S] [-p PORT] [-i KEY] host script
// or, with an agent (docs/agent.md): <agent words> [-p PORT] host script
std::vector<std::string> ssh_command(const std::string& host, const SshOptions& options, const std::string& script);

}  // namespace korovod::launcher
