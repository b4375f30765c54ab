#include "core/engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "core/startup_line.h"

namespace korovod {

Engine::Engine(RuntimeOptions options)
    : config_(options.config),
      env_(options.env ? options.env : std::make_shared<SystemEnv>()),
      log_(config_.log_level, config_.log_hide_time, std::move(options.log_sink)),
      transport_(std::move(options.transport)),
      backend_providers_(std::move(options.backends)),
      static_sets_(std::move(options.process_sets)),
      world_(transport_->world()),
      transport_name_(transport_->name()),
      handles_(*env_),
      timeline_(*env_),
      fusion_(config_.fusion_threshold_bytes),
      // Half the collective timeout for a ready event, so it is reported (naming the tensor)
      // before the watchdog fails the whole cycle.
      executor_(options.make_executor
                    ? options.make_executor(ExecutorParts{.env = *env_,
                                                          .fusion = fusion_,
                                                          .timeline = timeline_,
                                                          .handles = handles_,
                                                          .log = log_,
                                                          .ready_timeout_seconds = config_.collective_timeout_seconds / 2,
                                                          .world = world_})
                    : nullptr) {
  log_.set_rank(world_.rank);
  for (const auto& b : backend_providers_) backend_names_.push_back(b->name());
}

ProcessSetDeps Engine::deps() {
  NegotiatorOptions negotiation;
  negotiation.cache_capacity = config_.cache_capacity;
  negotiation.stall = {config_.stall_check_enabled, config_.stall_warning_seconds,
                       config_.stall_shutdown_seconds};
  negotiation.trace = &trace_;
  return ProcessSetDeps{*transport_, backend_providers_, negotiation, *env_, log_,
                        world_.rank == 0 ? &timeline_ : nullptr};
}

Status Engine::start() {
  if (!executor_) return Status::invalid_argument("RuntimeOptions.make_executor gave no executor");
  std::vector<int> everyone(world_.size);
  std::iota(everyone.begin(), everyone.end(), 0);
  std::vector<std::vector<int>> sets = {everyone};
  sets.insert(sets.end(), static_sets_.begin(), static_sets_.end());
  for (auto& ranks : sets) {
    std::sort(ranks.begin(), ranks.end());
    if (ranks.empty() || ranks.front() < 0 || ranks.back() >= world_.size ||
        std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
      return Status::invalid_argument(fmt::format("invalid process set {}", fmt::join(ranks, ",")));
    }
    Result<std::shared_ptr<ProcessSet>> set = create_process_set(sets_.take_next_id(), ranks, world_.rank, deps());
    if (!set.is_ok()) return set.status();
    sets_.insert(std::move(set).value());
  }
  global_set_ = sets_.get(kGlobalProcessSet);
  if (world_.rank == 0) {  // one line: the data planes the global set actually got
    // The negotiation runs where it actually runs: on shared memory once the set has it there.
    const std::string control = global_set_ && global_set_->control_on_data_plane
                                    ? fmt::format("SHM ({} for setup)", transport_name_)
                                    : transport_name_;
    log_.notice(startup_line(world_, control, global_set_ ? global_set_->backend_for(kCpuDevice) : nullptr,
                             global_set_ ? global_set_->backend_for(0) : nullptr, backend_providers_, config_));
  }
  if (world_.rank == 0 && !config_.timeline_path.empty() && config_.timeline_path != "DYNAMIC") {
    KOROVOD_RETURN_IF_ERROR(timeline_.start(config_.timeline_path, config_.timeline_mark_cycles));
  }
  Result<std::unique_ptr<EngineParameters>> params = EngineParameters::create(config_, world_.rank, *env_, log_);
  if (!params.is_ok()) return params.status();
  params_ = std::move(params).value();
  return Status::ok();
}

void Engine::release() {
  global_set_.reset();
  sets_.clear();
  backend_providers_.clear();
  transport_.reset();  // MPI_Finalize here when korovod initialised MPI
}

Status Engine::start_timeline(const std::string& path, bool mark_cycles) {
  if (world_.rank != 0) return Status::ok();
  return timeline_.start(path, mark_cycles);
}

bool Engine::inline_safe() const {
  const auto sets = sets_.members_in_id_order();
  if (sets.empty()) return false;
  for (const auto& set : sets) {
    if (!set->control_on_data_plane) return false;
  }
  return !device_tensors_seen_.load();
}

Backend* Engine::find_idle_plane() const {
  // Every cycle starts with the global set's round, so a rank that starts one rings everyone
  // there -- as long as that round runs on the plane's bit-vector allreduce, not the original
  // control channel (a cache too large for the control block).
  const auto global = sets_.get(kGlobalProcessSet);
  if (!global || !global->member() || !global->control_on_data_plane) return nullptr;
  Backend* plane = global->backend_for(kCpuDevice);
  const size_t words = 1 + (static_cast<size_t>(std::max(config_.cache_capacity, 0)) + 63) / 64;
  return plane && plane->offers_idle_wait() && words <= plane->bits_allreduce_words() ? plane : nullptr;
}

bool Engine::all_idle() const {
  // Requests queued while the cycle ran do not count: they are exactly what should start the
  // next cycle at once.
  for (const auto& set : sets_.members_in_id_order()) {
    if (set->queue.in_flight()) return false;
  }
  return true;
}

Engine::CycleResult Engine::run_cycle(Env::TimePoint give_up_at, bool shutdown) {
  if (!cycle_) {
    cycle_.emplace(CycleRun{}).sets = sets_.members_in_id_order();
    timeline_.mark_cycle();
  }
  CycleRun& c = *cycle_;
  CycleResult result;
  auto stop = [&](const Status& st) KOROVOD_REQUIRES(cycle_mu_) {
    cycle_.reset();
    trace_.end_cycle();
    timeline_.flush();
    result.end = CycleEnd::kStopped;
    result.error = st;
    result.idle = all_idle();
    return result;
  };
  for (; c.set < c.sets.size(); ++c.set, c.negotiated = false) {
    ProcessSet& set = *c.sets[c.set];
    if (!c.negotiated) {
      trace_.begin_set(set.id, ++set.cycles);
      CycleInput input;
      input.requests = set.queue.pop_requests();
      input.shutdown = shutdown;
      input.set_change_pending = set.id == 0 && sets_.change_pending();
      const bool input_had_change = input.set_change_pending;
      if (set.id == 0) input.param_update = params_->take_outgoing();
      Result<CycleOutput> out = set.negotiator->run_cycle(std::move(input));
      if (!out.is_ok()) return stop(out.status());
      c.planned = planner_.plan(out->responses, params_->fusion_threshold_bytes());
      c.next = 0;
      c.negotiated = true;
      if (set.id == 0) {
        c.shutdown = out->shutdown;
        c.apply_change = out->apply_set_change;
        c.refuse_changes = input_had_change && out->any_joined && !out->apply_set_change;
        c.param_update = std::move(out->param_update);
      }
    }
    for (; c.next < c.planned.size(); ++c.next) {
      const Response& r = *c.planned[c.next];
      trace_.response(c.planned[c.next]);
      Status st = executor_->execute(set, r, give_up_at);
      if (st.code() == StatusCode::kInProgress) {
        timeline_.flush();
        result.end = CycleEnd::kSuspended;
        return result;
      }
      if (!st.is_ok()) return stop(st);
      if (r.type == ResponseType::kAllreduce) c.bytes_reduced += response_bytes(r);
    }
    // Every rank leaves, after the responses this cycle already agreed on.
    if (set.id == 0 && c.shutdown) return stop(Status::ok());
  }
  Status error;
  const bool ok = finish_cycle(&error);
  result.sets_changed = ok && c.apply_change;
  cycle_.reset();
  trace_.end_cycle();
  timeline_.flush();
  result.end = ok ? CycleEnd::kDone : CycleEnd::kStopped;
  result.error = error;
  result.idle = all_idle();
  return result;
}

void Engine::abandon_cycle() {
  if (!cycle_) return;
  executor_->abandon();
  cycle_.reset();
  trace_.end_cycle();
}

bool Engine::finish_cycle(Status* error) {
  CycleRun& c = *cycle_;
  bool chunk_changed = false;
  if (Status st = params_->end_cycle(c.bytes_reduced, c.param_update, &chunk_changed); !st.is_ok()) {
    *error = st;
    return false;
  }
  // Every rank got the update in this cycle: all switch between the same two collectives.
  if (chunk_changed) {
    for (const auto& set : sets_.members_in_id_order()) {
      for (const auto& backend : set->backends) backend->set_chunk_bytes(params_->chunk_bytes());
    }
  }
  params_pending_ = params_->has_outgoing();
  if (c.apply_change) apply_set_change();
  // A joined rank waits in join() until every rank joins and submits no set change, while this
  // rank waits in add/remove_process_set: neither could ever return. Fail the change instead.
  if (c.refuse_changes) {
    const Status refused = Status::precondition(
        "add_process_set/remove_process_set: a rank has joined (it waits in join() for every rank to "
        "join) and cannot take part in the process set change; change process sets before join() or "
        "after it returns");
    for (auto& change : sets_.take_all_changes()) change.done->set_value(refused);
  }
  return true;
}

bool Engine::apply_set_change() {
  std::optional<SetChange> change = sets_.pop_change();
  if (!change) return false;
  if (change->add) {
    const int id = sets_.take_next_id();  // on every rank, members or not, so ids agree
    Result<std::shared_ptr<ProcessSet>> set = create_process_set(id, change->ranks, world_.rank, deps());
    if (!set.is_ok()) {
      change->done->set_value(set.status());
      return true;
    }
    for (const auto& backend : (*set)->backends) backend->set_chunk_bytes(params_->chunk_bytes());
    sets_.insert(std::move(set).value());
    change->done->set_value(id);
    return true;
  }
  std::shared_ptr<ProcessSet> removed = sets_.erase(change->id);
  if (removed) {
    for (auto& e : removed->queue.take_all()) {
      handles_.complete(e.handle, Status::aborted(fmt::format("process set {} was removed", change->id)));
    }
  }
  change->done->set_value(change->id);
  return true;
}

void Engine::drain(const Status& status) {
  for (const auto& set : sets_.all()) {
    for (auto& e : set->queue.take_all()) handles_.complete(e.handle, status);
  }
  fail_pending(status);
}

void Engine::fail_pending(const Status& status) {
  for (auto& change : sets_.take_all_changes()) change.done->set_value(status);
  handles_.fail_all_pending(status);
}

std::string Engine::silent_peers(double window_seconds) {
  // The global set only: every rank's background loop negotiates in it each cycle, so every rank
  // whose loop is stuck (wherever) asks, and a rank that does not is the one to name.
  const std::shared_ptr<ProcessSet> global = sets_.get(kGlobalProcessSet);
  return global ? global->silent_peers(window_seconds) : std::string();
}

bool Engine::interrupt_waits(const std::string& why) {
  bool named = false;
  for (const auto& set : sets_.members_in_id_order()) named = set->interrupt_waits(why) || named;
  return named;
}

}  // namespace korovod
