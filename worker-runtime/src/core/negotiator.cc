#include "core/negotiator.h"

#include <algorithm>
#include <bit>

namespace korovod {
namespace {

// Word 0 of the bit vector holds status flags, inverted where "some rank has X" must survive an
// AND; words 1.. hold one bit per cache slot.
constexpr uint64_t kNotShutdown = 1u << 0;
constexpr uint64_t kNotUncached = 1u << 1;
constexpr uint64_t kNotInvalid = 1u << 2;
constexpr uint64_t kNotJoined = 1u << 3;
constexpr uint64_t kSetChangePending = 1u << 4;
constexpr uint64_t kNoParamUpdate = 1u << 5;  // cleared by set rank 0 when it broadcasts parameters

size_t words_for(int capacity) { return 1 + (static_cast<size_t>(capacity) + 63) / 64; }
void set_bit(std::vector<uint64_t>& v, int bit) { v[1 + bit / 64] |= uint64_t{1} << (bit % 64); }
bool test_bit(const std::vector<uint64_t>& v, int bit) { return (v[1 + bit / 64] >> (bit % 64)) & 1; }

}  // namespace

Negotiator::Negotiator(ControlChannel& channel, NegotiatorOptions options, const Clock& clock,
                       const Logger& log, Timeline* timeline)
    : channel_(channel),
      trace_(options.trace),
      clock_(clock),
      global_ranks_(options.global_ranks),
      cache_(options.cache_capacity),
      stall_(options.stall, clock, log) {
  if (channel_.rank() == 0) {
    coordinator_.emplace(global_ranks_, options.stall, clock, log, timeline);
  }
  hits_by_bit_.resize(static_cast<size_t>(std::max(cache_.capacity(), 0)));
  pending_words_.assign(words_for(cache_.capacity()) - 1, 0);
}

template <typename Fn>
void Negotiator::for_each_pending_bit(Fn fn) const {
  for (size_t w = 0; w < pending_words_.size(); ++w) {
    for (uint64_t word = pending_words_[w]; word != 0; word &= word - 1) {
      fn(static_cast<int>(w * 64) + std::countr_zero(word));
    }
  }
}

void Negotiator::add_pending_hit(int bit, Request request, Clock::TimePoint now) {
  uint64_t& word = pending_words_[static_cast<size_t>(bit / 64)];
  const uint64_t mask = uint64_t{1} << (bit % 64);
  PendingHit& hit = hits_by_bit_[static_cast<size_t>(bit)];
  if (!(word & mask)) {
    word |= mask;
    ++pending_count_;
    hit.first_seen = now;
  }
  hit.request = std::move(request);
}

void Negotiator::to_coordinator(Request req) {
  // Its response will be cached with this rank's own signature (cache_new_responses).
  if (req.type != RequestType::kJoin) local_requests_[req.name] = req;
  uncached_.push_back(std::move(req));
}

bool Negotiator::grouped(const Request& req) { return req.group_id >= 0 && req.group_size > 1; }

void Negotiator::classify(std::vector<Request>& requests) {
  const Clock::TimePoint now = requests.empty() ? Clock::TimePoint{} : clock_.now();  // one read per cycle
  lookups_.clear();
  split_groups_.clear();
  for (const Request& req : requests) {
    ResponseCache::Lookup found;  // kMiss
    if (cache_.enabled() && ResponseCache::cacheable(req.type)) found = cache_.lookup(req);
    if (found.state != ResponseCache::State::kHit && grouped(req) &&
        std::find(split_groups_.begin(), split_groups_.end(), req.group_id) == split_groups_.end()) {
      split_groups_.push_back(req.group_id);
    }
    lookups_.push_back(found);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& req = requests[i];
    ResponseCache::Lookup found = lookups_[i];
    if (req.type == RequestType::kJoin) joined_ = true;
    // A group is negotiated as a whole, and the coordinator releases it only once every member
    // is ready there: a member the cache could serve while another member of its group (new,
    // or cached with other parameters) goes to the coordinator would leave that one waiting for
    // it forever. So the cached members of such a group are invalid too -- dropped from the
    // cache on every rank, whose own pending hits for them then go to the coordinator as well
    // -- and the whole group is renegotiated and cached again.
    if (found.state == ResponseCache::State::kHit && !split_groups_.empty() && grouped(req) &&
        std::find(split_groups_.begin(), split_groups_.end(), req.group_id) != split_groups_.end()) {
      found.state = ResponseCache::State::kInvalid;
    }
    if (found.state == ResponseCache::State::kHit) {
      add_pending_hit(found.bit, std::move(req), now);
      continue;
    }
    if (found.state == ResponseCache::State::kInvalid) invalid_bits_.insert(found.bit);
    to_coordinator(std::move(req));
  }
  uncache_stalled_hits();
}

void Negotiator::uncache_stalled_hits() {
  // A cached tensor other ranks have not submitted for long goes back through the coordinator,
  // so the stall inspector there can name the missing ranks. Only the oldest hit can be the
  // first one due: one clock read per cycle, not one per waiting tensor.
  if (pending_count_ == 0) return;
  Clock::TimePoint oldest = Clock::TimePoint::max();
  for_each_pending_bit([&](int bit) { oldest = std::min(oldest, hits_by_bit_[static_cast<size_t>(bit)].first_seen); });
  if (!stall_.should_uncache(oldest)) return;
  for_each_pending_bit([&](int bit) {
    if (stall_.should_uncache(hits_by_bit_[static_cast<size_t>(bit)].first_seen)) invalid_bits_.insert(bit);
  });
}

std::vector<uint64_t> Negotiator::status_and_hit_bits(const CycleInput& input) const {
  std::vector<uint64_t> bits(words_for(cache_.capacity()), 0);
  uint64_t flags = 0;
  if (!input.shutdown) flags |= kNotShutdown;
  const bool coordinator_wants_slow_path = coordinator_ && coordinator_->stall_check_due();
  if (uncached_.empty() && !coordinator_wants_slow_path) flags |= kNotUncached;
  if (invalid_bits_.empty()) flags |= kNotInvalid;
  if (!joined_) flags |= kNotJoined;
  if (input.set_change_pending) flags |= kSetChangePending;
  if (input.param_update.empty()) flags |= kNoParamUpdate;
  bits[0] = flags;
  std::copy(pending_words_.begin(), pending_words_.end(), bits.begin() + 1);
  return bits;
}

Status Negotiator::erase_invalid_everywhere(std::vector<uint64_t>& common) {
  std::vector<uint64_t> invalid(common.size(), 0);
  for (int bit : invalid_bits_) set_bit(invalid, bit);
  step("agreeing on the cache entries to drop");
  KOROVOD_RETURN_IF_ERROR(channel_.allreduce_bits(invalid, BitwiseOp::kOr));
  invalid_bits_.clear();
  for (int bit = 0; bit < cache_.capacity(); ++bit) {
    if (!test_bit(invalid, bit)) continue;
    cache_.erase(bit);
    const uint64_t mask = uint64_t{1} << (bit % 64);
    common[1 + bit / 64] &= ~mask;
    uint64_t& pending = pending_words_[static_cast<size_t>(bit / 64)];
    if (pending & mask) {
      pending &= ~mask;
      --pending_count_;
      to_coordinator(std::move(hits_by_bit_[static_cast<size_t>(bit)].request));
    }
  }
  return Status::ok();
}

void Negotiator::take_common_hits(const std::vector<uint64_t>& common, std::vector<ResponsePtr>& out) {
  out.reserve(out.size() + static_cast<size_t>(pending_count_));
  for (size_t w = 0; w < pending_words_.size(); ++w) {
    const uint64_t ready = pending_words_[w] & common[w + 1];
    pending_words_[w] &= ~ready;
    for (uint64_t word = ready; word != 0; word &= word - 1) {
      const int bit = static_cast<int>(w * 64) + std::countr_zero(word);
      out.push_back(cache_.shared_response(bit));
      cache_.touch(bit);  // ascending bit order on every rank keeps the LRU identical
      --pending_count_;  // its request stays in hits_by_bit_ until the bit's next hit replaces it
    }
  }
}

void Negotiator::hits_to_coordinator() {
  for_each_pending_bit([&](int bit) { to_coordinator(std::move(hits_by_bit_[static_cast<size_t>(bit)].request)); });
  std::fill(pending_words_.begin(), pending_words_.end(), 0);
  pending_count_ = 0;
}

Result<ResponseList> Negotiator::exchange_with_coordinator(bool shutdown) {
  RequestList mine{std::move(uncached_), shutdown};
  uncached_.clear();
  for (auto& r : mine.requests) r.request_rank = channel_.rank();
  step("gathering the requests at the coordinator");
  Result<std::vector<std::string>> gathered = channel_.gather_to_root(serialize(mine));
  if (!gathered.is_ok()) return gathered.status();
  std::string bytes;
  if (coordinator_) {
    ResponseList list;
    for (size_t r = 0; r < gathered->size(); ++r) {
      Result<RequestList> parsed = parse_request_list((*gathered)[r]);
      if (!parsed.is_ok()) return parsed.status();
      list.shutdown |= parsed->shutdown;
      coordinator_->add_requests(static_cast<int>(r), parsed->requests);
    }
    list.joined_count = coordinator_->joined_count();
    list.responses = coordinator_->take_ready();
    bytes = serialize(list);
  }
  step("broadcasting the coordinator's responses");
  KOROVOD_RETURN_IF_ERROR(channel_.broadcast_from_root(bytes));
  return parse_response_list(bytes);
}

void Negotiator::cache_new_responses(const ResponseList& list) {
  for (const Response& resp : list.responses) {
    if (resp.type == ResponseType::kJoin) joined_ = false;
    if (list.joined_count > 0 || resp.type == ResponseType::kError ||
        !ResponseCache::cacheable(static_cast<RequestType>(resp.type))) {
      continue;
    }
    auto local = local_requests_.find(resp.names[0]);
    Request signature;
    if (local != local_requests_.end()) signature = local->second;
    cache_.put(resp, signature);
  }
}

Result<CycleOutput> Negotiator::run_cycle(CycleInput input) {
  classify(input.requests);
  std::vector<uint64_t> bits = status_and_hit_bits(input);
  step("exchanging the status and cache bits");
  KOROVOD_RETURN_IF_ERROR(channel_.allreduce_bits(bits, BitwiseOp::kAnd));
  const uint64_t flags = bits[0];
  const bool any_invalid = !(flags & kNotInvalid);
  const bool any_joined = !(flags & kNotJoined);
  CycleOutput out;
  out.shutdown = !(flags & kNotShutdown);
  out.apply_set_change = (flags & kSetChangePending) != 0;
  out.any_joined = any_joined;
  if (!(flags & kNoParamUpdate)) {  // every member learns it in this same cycle
    out.param_update = std::move(input.param_update);
    step("broadcasting the tuned parameters");
    KOROVOD_RETURN_IF_ERROR(channel_.broadcast_from_root(out.param_update));
  }
  if (any_invalid) KOROVOD_RETURN_IF_ERROR(erase_invalid_everywhere(bits));
  if (any_joined) {  // joined ranks never submit, so cached tensors go through the coordinator
    hits_to_coordinator();
  } else {
    take_common_hits(bits, out.responses);
  }
  out.used_slow_path = !(flags & kNotUncached) || any_invalid || any_joined;
  if (out.used_slow_path) {
    Result<ResponseList> list = exchange_with_coordinator(input.shutdown);
    if (!list.is_ok()) return list.status();
    cache_new_responses(*list);
    out.shutdown |= list->shutdown;
    // Only what went to the coordinator is recorded, and only its responses answer it.
    for (const Response& r : list->responses) {
      for (const auto& name : r.names) local_requests_.erase(name);
    }
    for (auto& r : list->responses) out.responses.push_back(std::make_shared<const Response>(std::move(r)));
  }
  return out;
}

}  // namespace korovod
