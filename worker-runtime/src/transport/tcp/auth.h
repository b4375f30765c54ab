// Every TCP connection of a job (the rendezvous store, the control and data meshes) starts by
// proving knowledge of the job's secret, before any other byte is taken: an HMAC-SHA256
// challenge-response, mutual, with a fresh random nonce from each side per connection, the secret
// itself never on the wire. The side that accepted the connection speaks first:
//
//   hello   server -> client   "KRVH" | server nonce (32)
//   proof   client -> server   "KRVC" | client nonce (32) | payload | HMAC(K, "korovod client\0"
//                              | purpose "\0" | server nonce | client nonce | payload)
//   answer  server -> client   "KRVS" | HMAC(K, "korovod server\0" | purpose "\0" | client nonce
//                              | server nonce | payload)
//
// `purpose` ("store", "mesh") keeps a proof for one kind of connection from passing for another;
// `payload` is what the connecting side must say first anyway (the mesh's set and rank), so it
// is authenticated too. A recorded proof is worthless on a new connection (the server's nonce
// differs); the answer cannot be replayed either (the client's nonce differs), and the two
// directions use different labels, so a proof cannot be reflected back. What this does not give:
// secrecy or integrity of the bytes after the handshake (an attacker who can rewrite the job's
// TCP streams on the network is out of scope; docs/runtime-config.md).
//
// Without a secret (JobSecret{}), no hello / proof / answer at all: the payload alone, the wire
// format of jobs without authentication.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "korovod/status.h"
#include "transport/tcp/socket.h"

namespace korovod::tcp {

inline constexpr size_t kNonceBytes = 32, kMacBytes = 32, kMagicBytes = 4;
inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kHelloBytes = kMagicBytes + kNonceBytes;
inline constexpr size_t kAnswerBytes = kMagicBytes + kMacBytes;

class JobSecret {
 public:
  JobSecret() = default;  // none: connections are not authenticated
  ~JobSecret();
  JobSecret(const JobSecret& o) : key_(o.key_) {}
  JobSecret& operator=(const JobSecret& o);
  JobSecret(JobSecret&& o) noexcept;
  JobSecret& operator=(JobSecret&& o) noexcept;

  // The secret as given (a file's content, an environment variable's value), trailing
  // whitespace (a final newline) dropped; at least kMinSecretBytes bytes. `origin` names where it
  // came from in the error, which never shows the value.
  static Result<JobSecret> from_text(std::string_view text, const std::string& origin);
  // 32 random bytes as 64 hex digits (what korovodrun and the operator generate).
  static JobSecret generate();

  bool enabled() const { return !key_.empty(); }
  const std::string& text() const { return key_; }

 private:
  std::string key_;
};

// The job's secret as a process environment gives it: KOROVOD_JOB_SECRET, else the file that
// KOROVOD_JOB_SECRET_FILE names (what the operator mounts into an MPIJob's pods); none
// (JobSecret{}) when neither is set. Errors name the variable or file, never the value.
Result<JobSecret> job_secret_from_env(const std::map<std::string, std::string>& env);

// The connecting side, blocking (on a blocking or nonblocking socket) until `deadline`: waits
// for the hello, sends the proof with `payload`, checks the answer. `peer` names the other side
// in errors. Without a secret it just sends `payload`.
Status authenticate_to_server(int fd, const JobSecret& secret, std::string_view purpose, std::string_view payload,
                              Deadline deadline, const std::string& peer);

// The accepting side of one connection, as a state machine the caller feeds (the store server's
// poll loop, the mesh's accept loop: HandshakeGate).
class ServerHandshake {
 public:
  ServerHandshake(const JobSecret& secret, std::string purpose, size_t payload_bytes);
  // Bytes to send as soon as the connection is accepted ("" without a secret).
  const std::string& hello() const { return hello_; }
  // How many bytes the client's proof (or, without a secret, its payload) has: read exactly
  // these, nothing past them (what follows belongs to the protocol after the handshake).
  size_t proof_bytes() const;
  // A verdict on the first bytes of the proof, before all have arrived: an error when they
  // already cannot be a proof (garbage, a client without the secret).
  Status check_prefix(std::string_view first_bytes) const;
  // The whole proof: the answer to send back ("" without a secret), or why it was refused.
  Result<std::string> verify(std::string_view proof);
  const std::string& payload() const { return payload_; }

 private:
  JobSecret secret_;
  std::string purpose_;
  size_t payload_bytes_;
  std::string server_nonce_, hello_, payload_;
};

}  // namespace korovod::tcp
