#include "transport/tcp/auth.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace korovod::tcp {
namespace {

constexpr std::string_view kHelloMagic = "KRVH", kProofMagic = "KRVC", kAnswerMagic = "KRVS";

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  // RAND_bytes fails only when the OS gives OpenSSL no entropy at all: nothing sensible to do.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) std::abort();
  return out;
}

// HMAC-SHA256(key, label "\0" purpose "\0" first second payload).
std::string mac(const JobSecret& secret, std::string_view label, std::string_view purpose, std::string_view first,
                std::string_view second, std::string_view payload) {
  std::string message;
  message.reserve(label.size() + purpose.size() + 2 + first.size() + second.size() + payload.size());
  message.append(label).push_back('\0');
  message.append(purpose).push_back('\0');
  message.append(first).append(second).append(payload);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const std::string& key = secret.text();
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// A peer that closes in the middle of the handshake most likely refused our proof.
Status handshake_error(const Status& s, const std::string& peer) {
  if (s.code() == StatusCode::kAborted) {
    return Status::aborted(fmt::format("job-secret handshake with {}: {}", peer, s.message()));
  }
  return Status::unknown(fmt::format(
      "job-secret handshake with {}: {} (it refused this side's proof: a different job secret, or a peer "
      "without one)",
      peer, s.message()));
}

}  // namespace

JobSecret::~JobSecret() { OPENSSL_cleanse(key_.data(), key_.size()); }

JobSecret& JobSecret::operator=(const JobSecret& o) {
  if (this != &o) {
    OPENSSL_cleanse(key_.data(), key_.size());
    key_ = o.key_;
  }
  return *this;
}

JobSecret::JobSecret(JobSecret&& o) noexcept : key_(std::move(o.key_)) { o.key_.clear(); }

JobSecret& JobSecret::operator=(JobSecret&& o) noexcept {
  if (this != &o) {
    OPENSSL_cleanse(key_.data(), key_.size());
    key_ = std::move(o.key_);
    o.key_.clear();
  }
  return *this;
}

Result<JobSecret> JobSecret::from_text(std::string_view text, const std::string& origin) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  if (text.size() < kMinSecretBytes) {
    return Status::invalid_argument(fmt::format("the job secret from {} has {} bytes: at least {} are needed", origin,
                                                text.size(), kMinSecretBytes));
  }
  JobSecret s;
  s.key_ = std::string(text);
  return s;
}

JobSecret JobSecret::generate() {
  std::string raw = random_bytes(32);
  JobSecret s;
  for (char c : raw) s.key_ += fmt::format("{:02x}", static_cast<unsigned char>(c));
  OPENSSL_cleanse(raw.data(), raw.size());
  return s;
}

Status authenticate_to_server(int fd, const JobSecret& secret, std::string_view purpose, std::string_view payload,
                              Deadline deadline, const std::string& peer) {
  if (!secret.enabled()) return send_all(fd, payload.data(), payload.size(), deadline, peer);
  char hello[kHelloBytes];
  Status got = recv_all(fd, hello, sizeof hello, deadline, peer);
  if (!got.is_ok()) return handshake_error(got, peer);
  if (std::string_view(hello, kMagicBytes) != kHelloMagic) {
    return Status::unknown(fmt::format("job-secret handshake with {}: it did not send a handshake (a process of "
                                       "another job or a rank started without the job secret?)",
                                       peer));
  }
  const std::string_view server_nonce(hello + kMagicBytes, kNonceBytes);
  const std::string client_nonce = random_bytes(kNonceBytes);
  std::string proof(kProofMagic);
  proof.append(client_nonce).append(payload);
  proof += mac(secret, "korovod client", purpose, server_nonce, client_nonce, payload);
  Status sent = send_all(fd, proof.data(), proof.size(), deadline, peer);
  if (!sent.is_ok()) return handshake_error(sent, peer);
  char answer[kAnswerBytes];
  got = recv_all(fd, answer, sizeof answer, deadline, peer);
  if (!got.is_ok()) return handshake_error(got, peer);
  const std::string expected = mac(secret, "korovod server", purpose, client_nonce, server_nonce, payload);
  if (std::string_view(answer, kMagicBytes) != kAnswerMagic ||
      !same(std::string_view(answer + kMagicBytes, kMacBytes), expected)) {
    return Status::unknown(fmt::format("job-secret handshake with {}: its answer does not prove the job secret "
                                       "(a process of another job listens there?)",
                                       peer));
  }
  return Status::ok();
}

ServerHandshake::ServerHandshake(const JobSecret& secret, std::string purpose, size_t payload_bytes)
    : secret_(secret), purpose_(std::move(purpose)), payload_bytes_(payload_bytes) {
  if (secret_.enabled()) {
    server_nonce_ = random_bytes(kNonceBytes);
    hello_ = std::string(kHelloMagic) + server_nonce_;
  }
}

size_t ServerHandshake::proof_bytes() const {
  return secret_.enabled() ? kMagicBytes + kNonceBytes + payload_bytes_ + kMacBytes : payload_bytes_;
}

Status ServerHandshake::check_prefix(std::string_view first_bytes) const {
  if (!secret_.enabled()) return Status::ok();
  const size_t n = std::min(first_bytes.size(), kMagicBytes);
  if (first_bytes.substr(0, n) != kProofMagic.substr(0, n)) {
    return Status::unknown("it sent something other than a job-secret handshake (a client without the job secret?)");
  }
  return Status::ok();
}

Result<std::string> ServerHandshake::verify(std::string_view proof) {
  if (proof.size() != proof_bytes()) {
    return Status::unknown(fmt::format("a handshake of {} bytes, {} expected", proof.size(), proof_bytes()));
  }
  if (!secret_.enabled()) {
    payload_ = std::string(proof);
    return std::string();
  }
  KOROVOD_RETURN_IF_ERROR(check_prefix(proof));
  const std::string_view client_nonce = proof.substr(kMagicBytes, kNonceBytes);
  const std::string_view payload = proof.substr(kMagicBytes + kNonceBytes, payload_bytes_);
  const std::string_view their_mac = proof.substr(kMagicBytes + kNonceBytes + payload_bytes_);
  if (!same(their_mac, mac(secret_, "korovod client", purpose_, server_nonce_, client_nonce, payload))) {
    return Status::unknown(
        "its proof of the job secret is wrong (a different secret, a recorded handshake replayed, or not a rank of "
        "this job)");
  }
  payload_ = std::string(payload);
  return std::string(kAnswerMagic) + mac(secret_, "korovod server", purpose_, client_nonce, server_nonce_, payload);
}

Result<JobSecret> job_secret_from_env(const std::map<std::string, std::string>& env) {
  auto value = env.find("KOROVOD_JOB_SECRET");
  if (value != env.end()) return JobSecret::from_text(value->second, "KOROVOD_JOB_SECRET");
  auto path = env.find("KOROVOD_JOB_SECRET_FILE");
  if (path == env.end()) return JobSecret{};
  std::ifstream file(path->second, std::ios::binary);
  std::stringstream text;
  if (file) text << file.rdbuf();
  if (!file || file.bad()) {
    return Status::invalid_argument(fmt::format("KOROVOD_JOB_SECRET_FILE={}: cannot read it", path->second));
  }
  return JobSecret::from_text(text.str(), fmt::format("KOROVOD_JOB_SECRET_FILE={}", path->second));
}

}  // namespace korovod::tcp
