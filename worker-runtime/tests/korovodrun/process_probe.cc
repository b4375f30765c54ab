#include "process_probe.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace korovod::launcher::testing {

std::vector<int> processes_with(const std::string& marker) {
  std::vector<int> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == getpid()) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    const std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text.find(marker) == std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
    found.push_back(std::stoi(name));
  }
  return found;
}

std::string unique_marker() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return "korovodrun-test-" + std::to_string(getpid()) + "-" + std::to_string(now.count());
}

}  // namespace korovod::launcher::testing
