// Horovod's response cache: an LRU of single-tensor Responses indexed by a "cache bit". Every
// rank inserts, touches and erases in the same order, so bit positions agree across ranks and a
// bit vector can say "these cached tensors are ready everywhere" in one tiny allreduce.
#pragma once

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"

namespace korovod {

class ResponseCache {
 public:
  enum class State { kHit, kMiss, kInvalid };
  struct Lookup {
    State state = State::kMiss;
    int bit = -1;
  };

  explicit ResponseCache(int capacity) : capacity_(capacity), slots_(capacity) {}

  bool enabled() const { return capacity_ > 0; }
  int capacity() const { return capacity_; }
  int size() const { return static_cast<int>(by_name_.size()); }
  static bool cacheable(RequestType type);

  // kHit: same name and parameters as cached; kInvalid: same name, other parameters.
  Lookup lookup(const Request& request) const;
  const Response& response(int bit) const { return *shared_response(bit); }
  // The cached response itself, shared rather than copied: a cycle's hits stay valid when a
  // later put() of the same cycle evicts or replaces their slots, and their addresses identify
  // them (FusionPlanner remembers fused layouts by these pointers).
  const std::shared_ptr<const Response>& shared_response(int bit) const;
  const Request& request(int bit) const;
  bool contains_bit(int bit) const { return bit >= 0 && bit < capacity_ && slots_[bit].has_value(); }
  void touch(int bit);
  // Inserts (or replaces) a single-tensor response; evicts the least recently used when full.
  void put(const Response& response, const Request& local_request);
  void erase(int bit);

 private:
  struct Slot {
    std::shared_ptr<const Response> response;
    Request request;
    std::list<int>::iterator lru_pos;
  };
  int lowest_free_bit() const;

  int capacity_;
  std::vector<std::optional<Slot>> slots_;       // index = cache bit
  std::unordered_map<std::string, int> by_name_;
  std::list<int> lru_;                           // front = most recently used
};

bool same_parameters(const Request& a, const Request& b);

}  // namespace korovod
