#include "cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

namespace kube::testing {
namespace fs = std::filesystem;

std::string cluster_dir() {
  if (const char* d = std::getenv("KOROVOD_TESTCLUSTER_DIR"); d && *d && fs::exists(d)) return d;
  if (const char* k = std::getenv("KUBECONFIG"); k && *k && fs::exists(k))
    return fs::path(k).parent_path().string();
  return "";
}

Config cluster_config() {
  return load_config("", ConfigEnvironment::process());
}

RestClientOptions fast_options() {
  RestClientOptions o;
  o.qps = 500;
  o.burst = 1000;
  return o;
}

std::unique_ptr<RestClient> make_client(const Config& config) {
  return std::make_unique<RestClient>(config, fast_options());
}

std::string random_suffix() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 6; ++i) s.push_back("abcdefghijklmnopqrstuvwxyz0123456789"[rd() % 36]);
  return s;
}

TestNamespace::TestNamespace(Client& client, const std::string& prefix)
    : client_(client), name_(prefix + "-" + random_suffix()) {
  client_.create(resources::kNamespaces, "",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name_}}}});
}

TestNamespace::~TestNamespace() {
  try {
    client_.remove(resources::kNamespaces, "", name_, {});
  } catch (const std::exception&) {
    // Best effort: the cluster is thrown away after the run anyway.
  }
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string dechunk(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t n = std::stoul(body.substr(pos, eol - pos), nullptr, 16);
    if (n == 0) break;
    out += body.substr(eol + 2, n);
    pos = eol + 2 + n + 2;
  }
  return out;
}

// A minimal HTTP/1.1 POST to etcd's plain-HTTP gateway on 127.0.0.1.
Object etcd_post(const std::string& path, const Object& body) {
  const std::string url = read_text(fs::path(cluster_dir()) / "etcd-endpoint");  // http://h:p
  const auto colon = url.rfind(':');
  const int port = std::stoi(url.substr(colon + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to etcd at " + url);
  }
  const std::string payload = body.dump();
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/json\r\nConnection: close\r\n"
                          "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) resp.append(buf, size_t(n));
  ::close(fd);
  const auto end = resp.find("\r\n\r\n");
  if (end == std::string::npos || resp.compare(0, 12, "HTTP/1.1 200") != 0)
    throw std::runtime_error("etcd " + path + " failed: " + resp.substr(0, 300));
  const std::string head = resp.substr(0, end);
  std::string text = resp.substr(end + 4);
  if (head.find("chunked") != std::string::npos) text = dechunk(text);
  return Object::parse(text);
}

}  // namespace

int64_t compact_etcd() {
  // Any range answers with the store's current revision in its header.
  const Object range = etcd_post("/v3/kv/range", {{"key", "AA=="}});
  const int64_t rev = std::stoll(range["header"]["revision"].get<std::string>());
  etcd_post("/v3/kv/compaction", {{"revision", std::to_string(rev)}, {"physical", true}});
  return rev;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string throwaway_ca_pem() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("korovod-throwaway-ca"), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE")) {
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, size_t(len));
  BIO_free(bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

std::string rv_of(const Object& obj) { return obj["metadata"]["resourceVersion"].get<std::string>(); }
std::string name_of(const Object& obj) { return obj["metadata"]["name"].get<std::string>(); }

}  // namespace kube::testing
