#include "mpijob/ssh_keys.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include <openssl/core_names.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace mpijob {
namespace {

[[noreturn]] void throw_openssl(const char* what) {
  char buf[256] = "unknown error";
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  throw std::runtime_error(std::string("ssh key generation: ") + what + ": " + buf);
}

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// SEC1 ("type-specific") PEM, i.e. "EC PRIVATE KEY" with the named curve and public key.
std::string private_key_pem(EVP_PKEY* key) {
  std::unique_ptr<OSSL_ENCODER_CTX, decltype(&OSSL_ENCODER_CTX_free)> ctx(
      OSSL_ENCODER_CTX_new_for_pkey(key, OSSL_KEYMGMT_SELECT_ALL, "PEM", "type-specific", nullptr),
      OSSL_ENCODER_CTX_free);
  if (!ctx || OSSL_ENCODER_CTX_get_num_encoders(ctx.get()) == 0) throw_openssl("no PEM encoder");
  unsigned char* data = nullptr;
  size_t len = 0;
  if (OSSL_ENCODER_to_data(ctx.get(), &data, &len) != 1) throw_openssl("encode private key");
  std::string pem(reinterpret_cast<char*>(data), len);
  OPENSSL_free(data);
  return pem;
}

std::string public_point(EVP_PKEY* key) {
  size_t len = 0;
  if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, nullptr, 0, &len) != 1) {
    throw_openssl("public key size");
  }
  std::string point(len, '\0');
  if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY,
                                      reinterpret_cast<unsigned char*>(point.data()), len,
                                      &len) != 1) {
    throw_openssl("public key");
  }
  point.resize(len);
  return point;
}

// SSH wire format "string": uint32 big-endian length, then the bytes.
void put_ssh_string(std::string& out, std::string_view s) {
  const auto n = static_cast<uint32_t>(s.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(s);
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw std::invalid_argument("base64: length not a multiple of 4");
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) throw std::invalid_argument("base64: invalid input");
  // EVP_DecodeBlock counts padding as data; drop one byte per '='.
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string random_job_secret() {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) throw_openssl("job secret");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  OPENSSL_cleanse(raw, sizeof raw);
  return out;
}

SshKeyPair OpenSslKeyGenerator::generate() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"), EVP_PKEY_free);
  if (!key) throw_openssl("generate P-521 key");
  std::string blob;
  put_ssh_string(blob, "ecdsa-sha2-nistp521");
  put_ssh_string(blob, "nistp521");
  put_ssh_string(blob, public_point(key.get()));  // uncompressed point 0x04 || X || Y
  return {private_key_pem(key.get()), "ecdsa-sha2-nistp521 " + base64_encode(blob) + "\n", random_job_secret()};
}

}  // namespace mpijob
