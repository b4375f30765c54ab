#include "core/runtime_impl.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <numeric>

#include "core/startup_line.h"

namespace korovod {

RuntimeImpl::RuntimeImpl(RuntimeOptions options)
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
      executor_(*env_, fusion_, timeline_, handles_, log_, config_.collective_timeout_seconds / 2) {
  log_.set_rank(world_.rank);
  for (const auto& b : backend_providers_) backend_names_.push_back(b->name());
}

RuntimeImpl::~RuntimeImpl() {
  if (watchdog_) watchdog_->stop();
}

ProcessSetDeps RuntimeImpl::deps() {
  NegotiatorOptions negotiation;
  negotiation.cache_capacity = config_.cache_capacity;
  negotiation.stall = {config_.stall_check_enabled, config_.stall_warning_seconds,
                       config_.stall_shutdown_seconds};
  return ProcessSetDeps{*transport_, backend_providers_, negotiation, *env_, log_,
                        world_.rank == 0 ? &timeline_ : nullptr};
}

Status RuntimeImpl::start() {
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
  inline_possible_ = config_.inline_cycles && inline_safe();
  idle_plane_ = find_idle_plane();
  global_set_ = sets_.get(kGlobalProcessSet);
  if (world_.rank == 0) {  // one line: the data planes the global set actually got
    const auto global = sets_.get(0);
    // The negotiation runs where it actually runs: on shared memory once the set has it there.
    const std::string control = global && global->control_on_data_plane
                                    ? fmt::format("SHM ({} for setup)", transport_name_)
                                    : transport_name_;
    log_.notice(startup_line(world_, control, global ? global->backend_for(kCpuDevice) : nullptr,
                             global ? global->backend_for(0) : nullptr, backend_providers_, config_));
  }
  if (world_.rank == 0 && !config_.timeline_path.empty() && config_.timeline_path != "DYNAMIC") {
    KOROVOD_RETURN_IF_ERROR(timeline_.start(config_.timeline_path, config_.timeline_mark_cycles));
  }
  Result<std::unique_ptr<EngineParameters>> params = EngineParameters::create(config_, world_.rank, *env_, log_);
  if (!params.is_ok()) return params.status();
  params_ = std::move(params).value();
  running_ = true;
  watchdog_ = std::make_unique<Watchdog>(*env_, config_.collective_timeout_seconds, [this] { on_watchdog_timeout(); });
  background_ = std::thread([self = shared_from_this()] { self->background_loop(); });
  return Status::ok();
}

void RuntimeImpl::wait_for_next_cycle() {
  const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(params_->cycle_time_ms()));
  if (Backend* plane = idle_plane_.load()) return wait_for_news(*plane, cycle);  // runtime_drive.cc
  MutexLock lock(state_mu_);
  // Horovod sleeps the remainder of cycle_time since the last cycle start. We do the same while
  // tensors are pending (so tensors arriving together still fuse), but an engine with nothing
  // pending wakes for the first new request: a lone small tensor then waits for no timer, and
  // whatever arrives while that cycle runs is fused into the next one. While a waiting caller
  // drives the cycles (inline_driving_) this thread stands by, and afterwards counts its timer
  // from the caller's last cycle, so it does not add a cycle right behind the caller's.
  // The waits are timed even while a caller drives, so a caller that stops driving need not
  // wake this thread (a futex wake-up per operation is what inline cycles exist to avoid).
  while (!shutdown_requested_.load() && !loop_done_) {
    const auto now = env_->now();
    if (inline_driving_) {
      env_->wait_until(state_cv_, lock, now + cycle);
      continue;
    }
    if (cycle_suspended_) break;  // a caller left a cycle half done: carry on with it at once
    if (engine_idle_ && work_queued_) break;
    const auto next = last_cycle_start_ + cycle;
    if (now >= next) break;
    env_->wait_until(state_cv_, lock, next);
  }
}

bool RuntimeImpl::loop_done() const {
  MutexLock lock(state_mu_);
  return loop_done_;
}

bool RuntimeImpl::lock_cycle_until(std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    cycle_mu_.lock();
    return true;
  }
  return cycle_mu_.try_lock_until(deadline);
}

RuntimeImpl::CycleEnd RuntimeImpl::run_cycle_locked(std::chrono::steady_clock::time_point give_up_at) {
  const bool resuming = cycle_.has_value();
  {
    MutexLock lock(state_mu_);
    cycle_suspended_ = false;
    if (!resuming) {
      last_cycle_start_ = env_->now();
      // This cycle takes whatever is queued now, whichever thread runs it; what is queued from
      // here on is news for the next one.
      work_queued_ = false;
      news_since_ = {};
      wake_now_ = false;
    }
  }
  cycle_owner_ = std::this_thread::get_id();
  if (!resuming) {
    timeline_.mark_cycle();
    watchdog_->enter_cycle();  // a suspended cycle stays inside: peers may wait for it meanwhile
  }
  const CycleEnd end = run_one_cycle(give_up_at);
  if (end != CycleEnd::kSuspended) watchdog_->leave_cycle();
  timeline_.flush();
  cycle_owner_ = std::thread::id{};
  if (end == CycleEnd::kSuspended) {
    {
      MutexLock lock(state_mu_);
      cycle_suspended_ = true;
      engine_idle_ = false;
    }
    state_cv_.notify_all();
    ring_engine();
    return end;
  }
  if (end == CycleEnd::kDone && !watchdog_->fired()) return end;
  {
    MutexLock lock(state_mu_);
    loop_done_ = true;
  }
  state_cv_.notify_all();
  ring_engine();
  return CycleEnd::kStopped;
}

void RuntimeImpl::notify_work() {
  work_queued_ = true;
  wake_background();
}

void RuntimeImpl::wake_background() {
  {
    MutexLock lock(state_mu_);
    wake_now_ = true;
  }
  state_cv_.notify_all();
  ring_engine();
}

void RuntimeImpl::note_work() {
  // With inline cycles the thread that waits runs the cycle; waking the background thread here
  // would only make it race the caller for the cycle (see runtime_drive.cc). Its timed waits
  // see the flag without a lock taken per enqueued tensor; asleep on the doorbell (event mode),
  // it is rung once for the first request since the last cycle and then leaves the waiting
  // caller a cycle time to run it, so callers that never wait are still served.
  if (!inline_possible_.load()) return notify_work();
  if (!work_queued_.exchange(true)) ring_engine();
}

void RuntimeImpl::ring_engine() {
  if (Backend* plane = idle_plane_.load()) plane->idle_wake();
}

void RuntimeImpl::background_loop() {
  if (!config_.thread_affinity.empty()) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(config_.thread_affinity[world_.local_rank % config_.thread_affinity.size()], &cpus);
    pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
  }
  {
    MutexLock lock(state_mu_);
    last_cycle_start_ = env_->now();
  }
  while (true) {
    wait_for_next_cycle();
    TimedMutexLock cycle(cycle_mu_);  // a waiting caller may be finishing a cycle
    if (loop_done()) break;
    // Event mode: a caller that drove meanwhile may have run the cycle this thread woke for.
    if (Backend* plane = idle_plane_.load(); plane && !shutdown_requested_.load() && !cycle_worth_running(*plane)) {
      continue;
    }
    // Shutdown is negotiated like any request: the cycle carries it to the other ranks.
    if (run_cycle_locked(std::chrono::steady_clock::time_point::max()) == CycleEnd::kStopped) break;
  }
  // A cycle left half done lets go of its operations (their handles are failed below with the
  // rest) -- unless a caller is still inside one, stuck with a dead peer: not waited for.
  if (cycle_mu_.try_lock()) {
    TimedMutexLock cycle(cycle_mu_, std::adopt_lock);
    if (cycle_) {
      executor_.abandon();
      cycle_.reset();
    }
  }
  Status final_status = fatal_error();
  const Status gone = final_status.is_ok() ? Status::aborted("korovod has been shut down") : final_status;
  drain(gone);
  {
    MutexLock lock(state_mu_);
    loop_exited_ = true;
  }
  // What was enqueued while the above ran: a wait from now on sees loop_exited_ (wait()).
  handles_.fail_all_pending(gone);
  state_cv_.notify_all();
}

RuntimeImpl::CycleEnd RuntimeImpl::run_one_cycle(std::chrono::steady_clock::time_point give_up_at) {
  if (!cycle_) cycle_.emplace(CycleRun{}).sets = sets_.members_in_id_order();
  CycleRun& c = *cycle_;
  // Idle after this cycle: no tensor is in negotiation (waiting for other ranks). Requests
  // queued while this cycle ran do not count: they are exactly what should start the next cycle
  // at once. Published on every exit but a suspension (run_cycle_locked: not idle).
  auto publish_idle = [this] {
    bool idle = true;
    for (const auto& set : sets_.members_in_id_order()) idle = idle && !set->queue.in_flight();
    MutexLock lock(state_mu_);
    engine_idle_ = idle;
  };
  auto stop = [&](const Status& st) KOROVOD_REQUIRES(cycle_mu_) {
    if (!st.is_ok()) record_fatal(st);
    cycle_.reset();
    publish_idle();
    return CycleEnd::kStopped;
  };
  for (; c.set < c.sets.size(); ++c.set, c.negotiated = false) {
    ProcessSet& set = *c.sets[c.set];
    if (!c.negotiated) {
      CycleInput input;
      input.requests = set.queue.pop_requests();
      input.shutdown = shutdown_requested_.load();
      input.set_change_pending = set.id == 0 && sets_.change_pending();
      if (set.id == 0) input.param_update = params_->take_outgoing();
      Result<CycleOutput> out = set.negotiator->run_cycle(std::move(input));
      if (!out.is_ok()) return stop(out.status());
      c.planned = planner_.plan(out->responses, params_->fusion_threshold_bytes());
      c.next = 0;
      c.negotiated = true;
      if (set.id == 0) {
        c.shutdown = out->shutdown;
        c.apply_change = out->apply_set_change;
        c.param_update = std::move(out->param_update);
      }
    }
    for (; c.next < c.planned.size(); ++c.next) {
      const Response& r = *c.planned[c.next];
      Status st = executor_.execute(set, r, give_up_at);
      if (st.code() == StatusCode::kInProgress) return CycleEnd::kSuspended;
      if (!st.is_ok()) return stop(st);
      if (r.type == ResponseType::kAllreduce) c.bytes_reduced += response_bytes(r);
    }
    // Every rank leaves, after the responses this cycle already agreed on.
    if (set.id == 0 && c.shutdown) return stop(Status::ok());
  }
  const bool ok = finish_cycle();
  cycle_.reset();
  publish_idle();
  return ok ? CycleEnd::kDone : CycleEnd::kStopped;
}

bool RuntimeImpl::finish_cycle() {
  CycleRun& c = *cycle_;
  bool chunk_changed = false;
  if (Status st = params_->end_cycle(c.bytes_reduced, c.param_update, &chunk_changed); !st.is_ok()) {
    record_fatal(st);
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
  return true;
}

void RuntimeImpl::apply_set_change() {
  struct Recompute {
    RuntimeImpl& self;
    ~Recompute() { self.inline_possible_ = self.config_.inline_cycles && self.inline_safe(); }
  } recompute{*this};
  std::optional<SetChange> change = sets_.pop_change();
  if (!change) return;
  if (change->add) {
    const int id = sets_.take_next_id();  // on every rank, members or not, so ids agree
    Result<std::shared_ptr<ProcessSet>> set = create_process_set(id, change->ranks, world_.rank, deps());
    if (!set.is_ok()) {
      change->done->set_value(set.status());
      return;
    }
    for (const auto& backend : (*set)->backends) backend->set_chunk_bytes(params_->chunk_bytes());
    sets_.insert(std::move(set).value());
    change->done->set_value(id);
    return;
  }
  std::shared_ptr<ProcessSet> removed = sets_.erase(change->id);
  if (removed) {
    for (auto& e : removed->queue.take_all()) {
      handles_.complete(e.handle, Status::aborted(fmt::format("process set {} was removed", change->id)));
    }
  }
  change->done->set_value(change->id);
}

void RuntimeImpl::drain(const Status& status) {
  for (const auto& set : sets_.all()) {
    for (auto& e : set->queue.take_all()) handles_.complete(e.handle, status);
  }
  for (auto& change : sets_.take_all_changes()) change.done->set_value(status);
  handles_.fail_all_pending(status);
}

void RuntimeImpl::record_fatal(const Status& status) {
  {
    MutexLock lock(state_mu_);
    if (!fatal_.is_ok()) return;
    fatal_ = status;
    has_fatal_.store(true, std::memory_order_release);
  }
  log_.log(LogLevel::kError, "background loop stopped: {}", status.message());
}

Status RuntimeImpl::fatal_error() const {
  MutexLock lock(state_mu_);
  return fatal_;
}

void RuntimeImpl::on_watchdog_timeout() {
  // A plane that knows which peers its collective waits for (TCP, shared memory) ends that wait with an error
  // naming the ranks that never answered, and the background loop stops with it: given a moment
  // for that (the plane first collects its peers' failure notices, Mesh::kSettleSeconds). The
  // error below, which names no rank, is what is left when no plane could say.
  const std::string why = fmt::format("the collective timeout ({} s, KOROVOD_COLLECTIVE_TIMEOUT_SECONDS) passed",
                                      config_.collective_timeout_seconds);
  bool named = false;
  for (const auto& set : sets_.members_in_id_order()) named = set->interrupt_waits(why) || named;
  if (named) {
    MutexLock lock(state_mu_);
    const Env::TimePoint deadline = env_->deadline_after(std::chrono::seconds(1));
    while (!loop_done_ && fatal_.is_ok() && !env_->wait_until(state_cv_, lock, deadline)) {
    }
  }
  record_fatal(Status::aborted(fmt::format(
      "a collective of the background loop did not complete within {} s "
      "(KOROVOD_COLLECTIVE_TIMEOUT_SECONDS): a peer rank has probably died or stopped; all "
      "pending operations failed", config_.collective_timeout_seconds)));
  const Status status = fatal_error();  // the plane's, when it came first
  handles_.fail_all_pending(status);
  for (auto& change : sets_.take_all_changes()) change.done->set_value(status);
  if (config_.abort_on_collective_timeout) transport_->abort_job(1);
}

Status RuntimeImpl::shutdown() {
  if (!running_.exchange(false)) return fatal_error();
  shutdown_requested_ = true;
  state_cv_.notify_all();
  ring_engine();  // the sets are still there: the engine is running until it has exited
  bool exited = false;
  {
    MutexLock lock(state_mu_);
    auto done = [&]() KOROVOD_REQUIRES(state_mu_) { return loop_exited_; };
    if (config_.collective_timeout_seconds > 0) {
      const Env::TimePoint deadline = env_->deadline_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(config_.collective_timeout_seconds + 1.0)));
      while (!done() && !env_->wait_until(state_cv_, lock, deadline)) {
      }
      exited = done();
    } else {
      state_cv_.wait(lock, done);
      exited = true;
    }
  }
  watchdog_->stop();
  timeline_.stop();
  if (!exited) {
    // Stuck inside a collective with a dead peer: abandon the thread (it keeps this object
    // alive) and leave MPI as it is; the process is expected to exit with the error.
    background_.detach();
    record_fatal(Status::aborted("shutdown: the background thread is stuck in a collective"));
    return fatal_error();
  }
  background_.join();
  idle_plane_ = nullptr;
  while (callers_inside_.load() > 0) std::this_thread::yield();  // done with the old plane
  global_set_.reset();
  sets_.clear();
  backend_providers_.clear();
  transport_.reset();  // MPI_Finalize here when korovod initialised MPI
  return fatal_error();
}

Status RuntimeImpl::start_timeline(const std::string& path, bool mark_cycles) {
  if (world_.rank != 0) return Status::ok();
  return timeline_.start(path, mark_cycles);
}

}  // namespace korovod
