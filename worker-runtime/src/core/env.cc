#include "korovod/env.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace korovod {
namespace {

class StdioFile final : public WritableFile {
 public:
  StdioFile(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {}
  ~StdioFile() override { std::fclose(f_); }
  StdioFile(const StdioFile&) = delete;
  StdioFile& operator=(const StdioFile&) = delete;

  Status append(std::string_view bytes) override {
    if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) return failed("write");
    return Status::ok();
  }
  Status back_up(size_t n) override {
    if (std::fseek(f_, -static_cast<long>(n), SEEK_END) != 0) return failed("seek");
    return Status::ok();
  }
  Status flush() override { return std::fflush(f_) == 0 ? Status::ok() : failed("flush"); }

 private:
  Status failed(const char* what) const {
    return Status::unknown(fmt::format("{} '{}': {}", what, path_, std::strerror(errno)));
  }
  std::string path_;
  std::FILE* f_;
};

}  // namespace

Result<std::unique_ptr<WritableFile>> SystemEnv::new_writable_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::invalid_argument(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  return std::unique_ptr<WritableFile>(new StdioFile(path, f));
}

HostIdentity SystemEnv::host() const {
  HostIdentity h;
  char name[256] = {};
  h.hostname = gethostname(name, sizeof name - 1) == 0 && name[0] != '\0' ? name : "localhost";
  std::ifstream("/proc/sys/kernel/random/boot_id") >> h.boot_id;
  return h;
}

bool SystemEnv::process_alive(int pid) const {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  // The state follows the command name, which is in parentheses and may contain any of them.
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ||
         (line[paren + 2] != 'Z' && line[paren + 2] != 'X');
}

}  // namespace korovod
