#include "core/response_cache.h"

#include "core/check.h"

namespace korovod {

bool same_parameters(const Request& a, const Request& b) {
  return a.type == b.type && a.dtype == b.dtype && a.shape == b.shape && a.device == b.device &&
         a.op == b.op && a.prescale == b.prescale && a.postscale == b.postscale &&
         a.root_rank == b.root_rank;
}

bool ResponseCache::cacheable(RequestType type) {
  return type == RequestType::kAllreduce || type == RequestType::kAllgather ||
         type == RequestType::kBroadcast || type == RequestType::kAlltoall ||
         type == RequestType::kReducescatter;
}

ResponseCache::Lookup ResponseCache::lookup(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return {State::kMiss, -1};
  const Slot& slot = *slots_[it->second];
  return {same_parameters(slot.request, request) ? State::kHit : State::kInvalid, it->second};
}

const std::shared_ptr<const Response>& ResponseCache::shared_response(int bit) const {
  KOROVOD_CHECK(contains_bit(bit));
  return slots_[bit]->response;
}

const Request& ResponseCache::request(int bit) const {
  KOROVOD_CHECK(contains_bit(bit));
  return slots_[bit]->request;
}

void ResponseCache::touch(int bit) {
  KOROVOD_CHECK(contains_bit(bit));
  Slot& slot = *slots_[bit];
  lru_.splice(lru_.begin(), lru_, slot.lru_pos);
}

int ResponseCache::lowest_free_bit() const {
  for (int b = 0; b < capacity_; ++b) {
    if (!slots_[b]) return b;
  }
  return -1;
}

void ResponseCache::put(const Response& response, const Request& local_request) {
  if (!enabled()) return;
  KOROVOD_CHECK_EQ(response.names.size(), 1u);
  auto existing = by_name_.find(response.names[0]);
  if (existing != by_name_.end()) erase(existing->second);
  if (size() == capacity_) erase(lru_.back());
  int bit = lowest_free_bit();
  KOROVOD_CHECK(bit >= 0);
  lru_.push_front(bit);
  slots_[bit] = Slot{std::make_shared<const Response>(response), local_request, lru_.begin()};
  by_name_[response.names[0]] = bit;
}

void ResponseCache::erase(int bit) {
  if (!contains_bit(bit)) return;
  lru_.erase(slots_[bit]->lru_pos);
  by_name_.erase(slots_[bit]->response->names[0]);
  slots_[bit].reset();
}

}  // namespace korovod
