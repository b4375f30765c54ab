// The per-job SSH key pair, behind an interface so object builders stay deterministic in tests.
#pragma once

#include <string>
#include <string_view>

namespace mpijob {

struct SshKeyPair {
  std::string private_key_pem;  // "-----BEGIN EC PRIVATE KEY-----" (SEC1 DER), P-521
  std::string authorized_key;   // "ecdsa-sha2-nistp521 AAAA...\n"
};

class KeyGenerator {
 public:
  virtual ~KeyGenerator() = default;
  virtual SshKeyPair generate() = 0;
};

// ECDSA P-521 with OpenSSL 3, in the formats Go's x509.MarshalECPrivateKey and
// ssh.MarshalAuthorizedKey produce (what mpi-operator puts into the Secret).
class OpenSslKeyGenerator final : public KeyGenerator {
 public:
  SshKeyPair generate() override;
};

std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // throws std::invalid_argument

}  // namespace mpijob
