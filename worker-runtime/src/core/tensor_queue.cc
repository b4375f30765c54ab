#include "core/tensor_queue.h"

#include <fmt/format.h>

#include <unordered_set>

namespace korovod {

Status TensorQueue::add(std::vector<TensorEntry> entries) {
  std::lock_guard lock(mu_);
  std::unordered_set<std::string> batch;  // names within a group; a lone tensor needs none
  for (const auto& e : entries) {
    const std::string& name = e.request.name;
    if (table_.count(name) || (entries.size() > 1 && !batch.insert(name).second)) {
      return Status::invalid_argument(fmt::format(
          "Requested to {} a tensor with the same name '{}' as another tensor that is currently "
          "being processed (DUPLICATE_NAME_ERROR).", request_type_name(e.request.type), name));
    }
  }
  for (auto& e : entries) {
    queue_.push_back(e.request);
    std::string name = e.request.name;
    table_.emplace(std::move(name), std::move(e));
  }
  return Status::ok();
}

std::vector<Request> TensorQueue::pop_requests() {
  std::lock_guard lock(mu_);
  return std::exchange(queue_, {});
}

std::optional<TensorEntry> TensorQueue::take(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = table_.find(name);
  if (it == table_.end()) return std::nullopt;
  TensorEntry e = std::move(it->second);
  table_.erase(it);
  return e;
}

bool TensorQueue::in_flight() {
  std::lock_guard lock(mu_);
  return table_.size() > queue_.size();  // every queued request also has its table entry
}

std::vector<TensorEntry> TensorQueue::take_all() {
  std::lock_guard lock(mu_);
  std::vector<TensorEntry> out;
  for (auto& [name, e] : table_) out.push_back(std::move(e));
  table_.clear();
  queue_.clear();
  return out;
}

}  // namespace korovod
