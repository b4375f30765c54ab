#include "local/pods/log_book.h"

namespace local {

void PodLogBook::add(const std::string& pod, const std::string& container, const std::string& line) {
  kube::MutexLock lock(mu_);
  auto& lines = lines_[pod + "/" + container];
  lines.push_back(line);
  if (lines.size() > capacity_) lines.pop_front();
}

void PodLogBook::restarted(const std::string& pod, const std::string& container) {
  kube::MutexLock lock(mu_);
  lines_[pod + "/" + container].clear();
}

std::optional<std::string> PodLogBook::tail(const std::string&, const std::string& pod, const std::string& container,
                                            int lines) {
  kube::MutexLock lock(mu_);
  auto it = lines_.find(pod + "/" + container);
  if (it == lines_.end()) return std::nullopt;
  const auto& all = it->second;
  const size_t n = std::min(all.size(), static_cast<size_t>(std::max(lines, 0)));
  std::string out;
  for (size_t i = all.size() - n; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

}  // namespace local
