// The executor (algorithms/executor.h): the engine's ResponseExecutor, which runs each response
// with the collectives of this folder.
#include "algorithms/executor.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <thread>

namespace korovod {
namespace {

bool joined_rank_takes_part(ResponseType type) {
  return type == ResponseType::kAllreduce || type == ResponseType::kAllgather ||
         type == ResponseType::kBroadcast;
}

Status dispatch(OpContext& ctx) {
  switch (ctx.response.type) {
    case ResponseType::kAllreduce: return run_allreduce(ctx);
    case ResponseType::kAllgather: return run_allgather(ctx);
    case ResponseType::kBroadcast: return run_broadcast(ctx);
    case ResponseType::kAlltoall: return run_alltoall(ctx);
    case ResponseType::kReducescatter: return run_reducescatter(ctx);
    default: return Status::invalid_argument("unsupported response type");
  }
}

}  // namespace

void Executor::take_entries(ProcessSet& set, const Response& response) {
  entries_.clear();
  entries_.resize(response.names.size());
  // Every non-joined rank sent each tensor, so a name this rank has not queued is a joined
  // rank's share: a dummy unless taken below.
  for (OpEntry& op : entries_) op.joined_dummy = true;
  set.queue.take_each(response.names, [&](size_t i, TensorEntry& entry) {
    OpEntry& op = entries_[i];
    op.joined_dummy = false;
    op.input = std::move(entry.input);
    op.output = std::move(entry.output);
    op.splits = std::move(entry.splits);
    op.allocator = std::move(entry.allocator);
    op.ready_event = std::move(entry.ready_event);
    op.handle = entry.handle;
  });
  for (size_t i = 0; i < entries_.size(); ++i) entries_[i].name = response.names[i];
}

void Executor::complete_all(std::vector<OpEntry>& entries, const Status& status) {
  done_handles_.clear();
  done_outputs_.clear();
  for (auto& e : entries) {
    if (e.joined_dummy) continue;
    done_handles_.push_back(e.handle);
    if (status.is_ok()) done_outputs_.push_back(std::move(e.result));
  }
  handles_.complete_many(done_handles_, status, done_outputs_);
}

Status Executor::run_collective(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries,
                                std::chrono::steady_clock::time_point give_up_at) {
  Backend* backend = set.backend_for(response.device);
  if (!backend) {
    complete_all(entries, Status::invalid_argument(fmt::format(
                              "no backend is enabled for device {} (tensor '{}')", response.device,
                              response.names[0])));
    return Status::ok();
  }
  const bool traced = timeline_.active();
  if (traced && !waiting_for_ready_) {  // a resumed wait has marked its start already
    for (const auto& e : entries) timeline_.op_start(e.name, response.type);
  }
  if (Status ready = wait_until_ready(entries, give_up_at); !ready.is_ok()) {
    if (ready.code() == StatusCode::kInProgress) return ready;  // the entries stay for the resumed wait
    complete_all(entries, ready);
    return ready;  // this rank cannot take part: the others would wait for it, so stop the engine
  }
  OpContext ctx{*backend, fusion_, timeline_, handles_, response, entries, set.host_plane, layout_};
  ctx.layout.global = set.id == kGlobalProcessSet;  // the global set's ranks are the world's
  Status status = dispatch(ctx);
  if (traced) {
    for (size_t i = 0; i < entries.size(); ++i) {
      timeline_.op_end(entries[i].name, response.dtype,
                       i < response.shapes.size() ? response.shapes[i] : std::vector<int64_t>{});
    }
  }
  complete_all(entries, status);
  // Transport failures leave the ranks out of step: stop the engine. Anything else (a user
  // allocator refusing) only fails these operations.
  return status.code() == StatusCode::kUnknownError || status.code() == StatusCode::kAborted ? status
                                                                                               : Status::ok();
}

Status Executor::wait_until_ready(const std::vector<OpEntry>& entries, std::chrono::steady_clock::time_point give_up_at) {
  using Steady = std::chrono::steady_clock;
  for (const OpEntry& e : entries) {
    if (!e.ready_event) continue;
    for (int polls = 0;; ++polls) {
      Result<bool> ready = e.ready_event->ready();
      if (!ready.is_ok()) {
        return Status::aborted(fmt::format("tensor '{}': its ready event failed: {}", e.name, ready.status().message()));
      }
      if (*ready) break;
      const Steady::time_point now = env_.now();
      if (!ready_deadline_) {
        ready_deadline_ = ready_timeout_s_ > 0 ? now + std::chrono::duration_cast<Steady::duration>(
                                                           std::chrono::duration<double>(ready_timeout_s_))
                                               : Steady::time_point::max();
      }
      if (now >= *ready_deadline_) {
        return Status::aborted(fmt::format("tensor '{}': its ready event did not fire within {} s "
                                           "(KOROVOD_COLLECTIVE_TIMEOUT_SECONDS)", e.name, ready_timeout_s_));
      }
      // A waiting caller's thread goes back to it on time; the cycle resumes elsewhere.
      if (now >= give_up_at) return Status::in_progress();
      // A kernel usually finishes within microseconds of negotiation; beyond that, stop spinning.
      if (polls < 64) {
        std::this_thread::yield();
      } else {
        env_.sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  return Status::ok();
}

Status Executor::execute(ProcessSet& set, const Response& response, std::chrono::steady_clock::time_point give_up_at) {
  if (!waiting_for_ready_) {
    take_entries(set, response);
    ready_deadline_.reset();
  }
  Status status = execute_entries(set, response, entries_, give_up_at);
  waiting_for_ready_ = status.code() == StatusCode::kInProgress;
  if (waiting_for_ready_) return status;
  entries_.clear();  // keeps the capacity, not the operations' allocators, events and buffers
  return status;
}

void Executor::abandon() {
  waiting_for_ready_ = false;
  entries_.clear();
}

Status Executor::execute_entries(ProcessSet& set, const Response& response, std::vector<OpEntry>& entries,
                                 std::chrono::steady_clock::time_point give_up_at) {
  switch (response.type) {
    case ResponseType::kError: {
      std::erase_if(entries, [](const OpEntry& e) { return e.joined_dummy; });
      complete_all(entries, Status::precondition(response.error));
      return Status::ok();
    }
    case ResponseType::kJoin:
    case ResponseType::kBarrier: {
      for (auto& e : entries) e.result.last_joined_rank = response.last_joined_rank;
      std::erase_if(entries, [](const OpEntry& e) { return e.joined_dummy; });
      complete_all(entries, Status::ok());
      return Status::ok();
    }
    default:
      break;
  }
  if (!joined_rank_takes_part(response.type)) {
    std::erase_if(entries, [](const OpEntry& e) { return e.joined_dummy; });
    if (entries.empty()) return Status::ok();
  }
  return run_collective(set, response, entries, give_up_at);
}

std::unique_ptr<ResponseExecutor> make_executor(const ExecutorParts& parts) {
  return std::make_unique<Executor>(parts.env, parts.fusion, parts.timeline, parts.handles, parts.log,
                                    parts.ready_timeout_seconds, parts.world);
}

}  // namespace korovod
