#include "core/cycle_trace.h"

#include <fmt/format.h>

#include <numeric>

namespace korovod {

void CycleTrace::begin_set(int set_id, int64_t cycle) {
  MutexLock lock(mu_);
  set_ = set_id;
  cycle_ = cycle;
  step_ = nullptr;
  response_.reset();
}

void CycleTrace::step(const char* what) {
  MutexLock lock(mu_);
  step_ = what;
}

void CycleTrace::response(ResponsePtr r) {
  MutexLock lock(mu_);
  step_ = nullptr;
  response_ = std::move(r);
}

void CycleTrace::end_cycle() {
  MutexLock lock(mu_);
  set_ = -1;
  step_ = nullptr;
  response_.reset();
}

std::string CycleTrace::describe() const {
  MutexLock lock(mu_);
  if (set_ < 0) return {};
  const std::string where = fmt::format("cycle {} of process set {}", cycle_, set_);
  if (step_) return fmt::format("{}, negotiating: {}", where, step_);
  if (!response_) return fmt::format("{}, negotiating", where);
  const Response& r = *response_;
  const std::string first = r.names.empty() ? std::string("?") : r.names[0];
  const std::string more = r.names.size() > 1 ? fmt::format(" and {} more tensors", r.names.size() - 1) : "";
  std::string size;
  if (r.type == ResponseType::kAllreduce || r.type == ResponseType::kAdasum) {  // sizes: numel per tensor
    size = fmt::format(", {} elements", std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0}));
  }
  return fmt::format("{}, running {} of '{}'{} ({}{})", where, response_type_name(r.type), first, more,
                     dtype_name(r.dtype), size);
}

}  // namespace korovod
