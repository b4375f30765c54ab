// kubeconfig files (operator/kube/config.cc: load_kubeconfig, load_kubeconfigs, base64_decode),
// which korovod-operator and `korovod` read from --kubeconfig, $KUBECONFIG or ~/.kube/config.
//
// Invariants, for any file content:
//  - loading either succeeds or throws ConfigError naming the file ("kubeconfig <path>: ..."):
//    no other exception (a YAML or JSON type error, std::out_of_range) and no crash;
//  - loading is deterministic, and a KUBECONFIG list naming the file twice gives the same
//    Config as the file alone (kubectl's merge takes each entry from the first file);
//  - a loaded server has no trailing '/';
// and base64_decode inverts standard base64 of the same bytes.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_check.h"
#include "kube/config.h"

namespace {

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool same(const kube::Config& a, const kube::Config& b) {
  return a.server == b.server && a.ca_pem == b.ca_pem &&
         a.insecure_skip_tls_verify == b.insecure_skip_tls_verify && a.token == b.token &&
         a.token_file == b.token_file && a.client_cert_pem == b.client_cert_pem &&
         a.client_key_pem == b.client_key_pem && a.namespace_ == b.namespace_;
}

// The file the input is written to, in a directory of its own (relative certificate paths in
// the input resolve there), made once per process and removed when it exits normally.
class InputFile {
 public:
  InputFile() {
    dir_ = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : "/tmp") +
           "/korovod-fuzz-kubeconfig-XXXXXX";
    FUZZ_CHECK(mkdtemp(dir_.data()) != nullptr, "cannot make a temp directory");
    path_ = dir_ + "/config";
  }
  ~InputFile() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

const std::string& input_path() {
  static const InputFile file;
  return file.path();
}

// Loads, turning ConfigError into nullopt after checking that it names the file.
std::optional<kube::Config> load(const std::vector<std::string>& paths) {
  try {
    return paths.size() == 1 ? kube::load_kubeconfig(paths[0]) : kube::load_kubeconfigs(paths);
  } catch (const kube::ConfigError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.rfind("kubeconfig " + paths[0] + ": ", 0) == 0 ||
                   what.rfind("KUBECONFIG=" + paths[0], 0) == 0,
               "error does not name the file: " + what);
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FUZZ_CHECK(kube::base64_decode(base64(text)) == text, "base64 round trip: " + fuzz::excerpt(text));

  // Certificate paths are read whole: device and proc files (/dev/zero never ends) are not
  // what this target tests.
  for (const char* special : {"/dev", "/proc", "/sys"})
    if (text.find(special) != std::string::npos) return 0;
  const std::string& path = input_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  const auto once = load({path});
  const auto again = load({path});
  FUZZ_CHECK(once.has_value() == again.has_value() && (!once || same(*once, *again)),
             "loading is not deterministic: " + fuzz::excerpt(text));
  const auto twice = load({path, path});
  FUZZ_CHECK(once.has_value() == twice.has_value() && (!once || same(*once, *twice)),
             "a KUBECONFIG list of the file twice differs from the file: " + fuzz::excerpt(text));
  if (once) FUZZ_CHECK(once->server.empty() || once->server.back() != '/', once->server);
  return 0;
}
