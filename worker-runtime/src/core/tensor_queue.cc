#include "core/tensor_queue.h"

#include <fmt/format.h>

#include <unordered_set>

namespace korovod {
namespace {

Status duplicate_name(const Request& r) {
  return Status::invalid_argument(fmt::format(
      "Requested to {} a tensor with the same name '{}' as another tensor that is currently "
      "being processed (DUPLICATE_NAME_ERROR).", request_type_name(r.type), r.name));
}

}  // namespace

Status TensorQueue::add(TensorEntry e) {
  std::string name = e.request.name;
  MutexLock lock(mu_);
  auto [it, inserted] = table_.try_emplace(std::move(name), std::move(e));  // e moves only if inserted
  if (!inserted) return duplicate_name(e.request);
  queue_.push_back(std::move(it->second.request));
  return Status::ok();
}

Status TensorQueue::add(std::vector<TensorEntry> entries) {
  if (entries.size() == 1) return add(std::move(entries.front()));
  MutexLock lock(mu_);
  std::unordered_set<std::string> batch;  // names within a group
  for (const auto& e : entries) {
    if (table_.count(e.request.name) || !batch.insert(e.request.name).second) return duplicate_name(e.request);
  }
  for (auto& e : entries) {
    std::string name = e.request.name;
    queue_.push_back(std::move(e.request));
    table_.emplace(std::move(name), std::move(e));
  }
  return Status::ok();
}

std::vector<Request> TensorQueue::pop_requests() {
  MutexLock lock(mu_);
  std::vector<Request> out;
  out.swap(queue_);
  // Room for as many as this cycle took: the next burst of enqueues does not regrow the vector
  // step by step (each step a large allocation and a move of every request so far).
  queue_.reserve(out.size());
  return out;
}

bool TensorQueue::in_flight() {
  MutexLock lock(mu_);
  return table_.size() > queue_.size();  // every queued request also has its table entry
}

std::vector<TensorEntry> TensorQueue::take_all() {
  MutexLock lock(mu_);
  std::vector<TensorEntry> out;
  for (auto& [name, e] : table_) out.push_back(std::move(e));
  table_.clear();
  queue_.clear();
  return out;
}

}  // namespace korovod
