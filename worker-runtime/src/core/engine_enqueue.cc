// The caller's side of the engine: validating and queueing operations, checking process-set
// changes. The CycleDriver calls these once it has checked the engine is running.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "core/engine.h"

namespace korovod {
namespace {

// An unnamed op is named by how many unnamed ops its process set had before it on this rank, not
// by this rank's handle count: every member of a set counts the same ops of that set, so the
// names agree across ranks even after some ranks ran ops (on other sets) that the rest did not.
std::string default_name(RequestType type, ProcessSet& set) {
  std::string op(request_type_name(type));
  std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
  const int64_t n = set.unnamed_ops++;
  if (set.id == kGlobalProcessSet) return fmt::format("{}.noname.{}", op, n);
  return fmt::format("{}.noname.set{}.{}", op, set.id, n);
}

Status validate_tensor(const std::string& name, const TensorView& t, const char* what) {
  if (!is_valid_dtype(static_cast<int32_t>(t.dtype))) {
    return Status::invalid_argument(fmt::format("tensor '{}': invalid {} dtype", name, what));
  }
  for (int64_t d : t.shape) {
    if (d < 0) return Status::invalid_argument(fmt::format("tensor '{}': negative {} dimension", name, what));
  }
  if (t.data == nullptr && t.numel() > 0) {
    return Status::invalid_argument(fmt::format("tensor '{}': {} data is null", name, what));
  }
  return Status::ok();
}

Status validate_alltoall(const CollectiveArgs& a, int set_size) {
  if (a.input.shape.empty()) return Status::invalid_argument(fmt::format("tensor '{}': alltoall of a scalar", a.name));
  const int64_t dim0 = a.input.shape[0];
  if (a.splits.empty()) {
    if (dim0 % set_size != 0) {
      return Status::invalid_argument(fmt::format(
          "tensor '{}': dim 0 ({}) is not divisible by the process set size ({}); pass splits", a.name,
          dim0, set_size));
    }
    return Status::ok();
  }
  if (static_cast<int>(a.splits.size()) != set_size) {
    return Status::invalid_argument(fmt::format("tensor '{}': {} splits for {} ranks", a.name, a.splits.size(), set_size));
  }
  int64_t sum = 0;
  for (int32_t s : a.splits) {
    if (s < 0) return Status::invalid_argument(fmt::format("tensor '{}': negative split", a.name));
    sum += s;
  }
  if (sum > dim0) {
    return Status::invalid_argument(fmt::format("tensor '{}': splits sum to {} > dim 0 ({})", a.name, sum, dim0));
  }
  return Status::ok();
}

Status validate_args(const CollectiveArgs& a, int set_size) {
  if (a.type == RequestType::kJoin || a.type == RequestType::kBarrier) return Status::ok();
  KOROVOD_RETURN_IF_ERROR(validate_tensor(a.name, a.input, "input"));
  if (a.type == RequestType::kAdasum) {  // Horovod's own request type for it; the API asks by op
    return Status::invalid_argument(fmt::format("tensor '{}': ask for Adasum as an allreduce with op ADASUM", a.name));
  }
  if (a.type == RequestType::kAllreduce || a.type == RequestType::kBroadcast) {
    KOROVOD_RETURN_IF_ERROR(validate_tensor(a.name, a.output, "output"));
    if (a.output.dtype != a.input.dtype || a.output.shape != a.input.shape) {
      return Status::invalid_argument(fmt::format("tensor '{}': output dtype/shape differ from the input", a.name));
    }
  }
  if (a.type == RequestType::kAlltoall) return validate_alltoall(a, set_size);
  if ((a.type == RequestType::kAllgather || a.type == RequestType::kReducescatter) && a.input.shape.empty()) {
    return Status::invalid_argument(fmt::format("tensor '{}': {} of a scalar is not supported", a.name,
                                                request_type_name(a.type)));
  }
  return Status::ok();
}

}  // namespace

Status Engine::make_entry(CollectiveArgs& a, ProcessSet& set, Handle handle, int group_id, int group_size,
                          TensorEntry& e) {
  if (a.type == RequestType::kJoin) a.name = "join";
  if (a.type == RequestType::kBarrier) a.name = "barrier";
  if (a.name.empty()) a.name = default_name(a.type, set);
  KOROVOD_RETURN_IF_ERROR(validate_args(a, static_cast<int>(set.ranks.size())));
  Request& r = e.request;
  r.request_rank = set.set_rank;
  r.type = a.type;
  r.dtype = a.input.dtype;
  r.name = std::move(a.name);  // validated above; errors below name r.name
  r.device = a.input.device;
  // A device collective may block in NCCL, which no shared-memory wait can give up on: from now
  // on only the background thread runs cycles (the driver reads this after the enqueue).
  if (r.device != kCpuDevice && !device_tensors_seen_.load(std::memory_order_relaxed)) device_tensors_seen_ = true;
  // The request takes the input's shape rather than a copy (an allocation per tensor): only
  // alltoall's algorithm reads OpEntry::input.shape, so only alltoall keeps it there too.
  if (a.type == RequestType::kAlltoall) {
    r.shape = a.input.shape;
  } else {
    r.shape = std::move(a.input.shape);
  }
  r.prescale = a.prescale;
  r.postscale = a.postscale;
  r.op = a.op;
  r.group_id = group_id;
  r.group_size = group_size;
  if (a.type == RequestType::kBroadcast) {
    r.root_rank = set.set_rank_of(a.root_rank);
    if (r.root_rank < 0) {
      return Status::invalid_argument(fmt::format("tensor '{}': root rank {} is not in process set {}",
                                                  r.name, a.root_rank, set.id));
    }
  }
  e.input = std::move(a.input);
  e.output = std::move(a.output);
  e.splits = std::move(a.splits);
  e.allocator = std::move(a.allocator);
  e.ready_event = std::move(a.ready_event);
  e.handle = handle;
  return Status::ok();
}

Result<ProcessSet*> Engine::set_for_enqueue(int set_id, std::shared_ptr<ProcessSet>& hold) {
  // The global set lives as long as the engine runs: no table lock and no reference count per
  // tensor for it.
  ProcessSet* set = set_id == kGlobalProcessSet ? global_set_.get() : nullptr;
  if (!set) {
    hold = sets_.get(set_id);
    set = hold.get();
  }
  if (!set) return Status::invalid_argument(fmt::format("unknown process set {}", set_id));
  if (!set->member()) {
    return Status::invalid_argument(fmt::format("rank {} is not in process set {}", world_.rank, set_id));
  }
  return set;
}

Result<Handle> Engine::enqueue_one(ProcessSet& set, CollectiveArgs&& args) {
  const Handle h = handles_.create(std::move(args.on_done));
  TensorEntry e;
  Status st = make_entry(args, set, h, -1, 1, e);
  if (st.is_ok()) st = set.queue.add(std::move(e));
  if (!st.is_ok()) {
    handles_.release(h);
    return st;
  }
  return h;
}

Result<std::vector<Handle>> Engine::enqueue(ProcessSet& set, std::vector<CollectiveArgs> args) {
  const int set_id = set.id;
  const int group_size = static_cast<int>(args.size());
  const int group_id = group_size > 1 ? set.next_group_id++ : -1;
  std::vector<TensorEntry> entries;
  std::vector<Handle> handles;
  entries.reserve(args.size());
  handles.reserve(args.size());
  auto refuse = [&](Status st) {
    for (Handle created : handles) handles_.release(created);
    return st;
  };
  for (auto& a : args) {
    if (a.process_set != set_id) return refuse(Status::invalid_argument("a group must use one process set"));
    Handle h = handles_.create(std::move(a.on_done));
    handles.push_back(h);
    entries.emplace_back();
    if (Status st = make_entry(a, set, h, group_id, group_size, entries.back()); !st.is_ok()) return refuse(st);
  }
  if (Status st = set.queue.add(std::move(entries)); !st.is_ok()) return refuse(st);
  return handles;
}

Status Engine::check_new_process_set(std::vector<int>& ranks) const {
  if (!config_.dynamic_process_sets) {
    return Status::invalid_argument("dynamic process sets need KOROVOD_DYNAMIC_PROCESS_SETS=1");
  }
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty() || ranks.front() < 0 || ranks.back() >= world_.size ||
      std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    return Status::invalid_argument(fmt::format("invalid process set ranks [{}]", fmt::join(ranks, ", ")));
  }
  if (auto existing = sets_.set_with(ranks)) {
    return Status::invalid_argument(fmt::format("a process set with these ranks exists (id {}{})", *existing,
                                                *existing == kGlobalProcessSet ? ", the global set" : ""));
  }
  return Status::ok();
}

Status Engine::check_removable_process_set(int id) const {
  if (!config_.dynamic_process_sets) {
    return Status::invalid_argument("dynamic process sets need KOROVOD_DYNAMIC_PROCESS_SETS=1");
  }
  if (id == kGlobalProcessSet) return Status::invalid_argument("the global process set cannot be removed");
  if (!sets_.get(id)) return Status::invalid_argument(fmt::format("unknown process set {}", id));
  return Status::ok();
}

}  // namespace korovod
