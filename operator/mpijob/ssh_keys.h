// The per-job key material (the SSH key pair and korovod's job secret), behind an interface so
// object builders stay deterministic in tests.
#pragma once

#include <string>
#include <string_view>

namespace mpijob {

struct SshKeyPair {
  std::string private_key_pem;  // "-----BEGIN EC PRIVATE KEY-----" (SEC1 DER), P-521
  std::string authorized_key;   // "ecdsa-sha2-nistp521 AAAA...\n"
  std::string job_secret;       // 32 random bytes as 64 hex digits (kJobSecretKey)
};

class KeyGenerator {
 public:
  virtual ~KeyGenerator() = default;
  virtual SshKeyPair generate() = 0;
};

// ECDSA P-521 with OpenSSL 3, in the formats Go's x509.MarshalECPrivateKey and
// ssh.MarshalAuthorizedKey produce (what mpi-operator puts into the Secret); the job secret from
// OpenSSL's RAND_bytes.
class OpenSslKeyGenerator final : public KeyGenerator {
 public:
  SshKeyPair generate() override;
};

// 32 bytes of RAND_bytes as 64 hex digits (throws when OpenSSL has no entropy).
std::string random_job_secret();

std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // throws std::invalid_argument

}  // namespace mpijob
