// What korovod-agent reads from its environment, each read once in main() into the options of
// the subcommand (docs/agent.md lists them): the job secret, the port, rsh's start timeout.
#pragma once

#include "korovod/config.h"
#include "korovod/status.h"
#include "transport/tcp/auth.h"

namespace korovod::agent {

inline constexpr int kDefaultPort = 2223;
inline constexpr double kDefaultConnectTimeoutSeconds = 60;
inline constexpr const char* kSecretVariable = "KOROVOD_JOB_SECRET";
inline constexpr const char* kPortVariable = "KOROVOD_AGENT_PORT";
inline constexpr const char* kConnectTimeoutVariable = "KOROVOD_AGENT_CONNECT_TIMEOUT";

// KOROVOD_JOB_SECRET, else the file KOROVOD_JOB_SECRET_FILE names (the operator's mount), read
// as the runtime reads it (tcp::job_secret_from_env); an error naming the variable or file
// (never the value) when neither is set, the file is unreadable or the secret too short.
Result<tcp::JobSecret> job_secret_from(const EnvMap& env);
// KOROVOD_AGENT_PORT, else 2223.
Result<int> port_from(const EnvMap& env);
// KOROVOD_AGENT_CONNECT_TIMEOUT seconds, else 60.
Result<double> connect_timeout_from(const EnvMap& env);
// A port number (1..65535) given as text; `what` names it in the error.
Result<int> parse_port(const std::string& text, const std::string& what);

}  // namespace korovod::agent
