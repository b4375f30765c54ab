#include "core/handle_table.h"

#include <chrono>

namespace korovod {

Status HandleTable::unknown(Handle handle) { return Status::invalid_argument("unknown handle " + std::to_string(handle)); }

Handle HandleTable::create(DoneCallback on_done) {
  MutexLock lock(mu_);
  Handle h = next_++;
  states_.try_emplace(h).first->second.on_done = std::move(on_done);
  return h;
}

HandleTable::State* HandleTable::find(Handle handle) const {
  auto it = states_.find(handle);
  return it == states_.end() ? nullptr : const_cast<State*>(&it->second);
}

void* HandleTable::allocate_owned(Handle handle, size_t bytes) {
  MutexLock lock(mu_);
  State* state = find(handle);
  if (!state) return nullptr;
  state->owned.resize(bytes == 0 ? 1 : bytes);
  return state->owned.data();
}

void HandleTable::finish(Handle handle, State& state) {
  state.done = true;
  if (state.released) states_.erase(handle);
}

bool HandleTable::complete(Handle handle, Status status, OpOutput output) {
  DoneCallback callback;
  Status delivered;
  State* state = nullptr;
  {
    MutexLock lock(mu_);
    state = find(handle);
    if (!state || state->done || state->completing) return false;
    state->completing = true;
    state->status = std::move(status);
    state->output = std::move(output);
    callback = std::move(state->on_done);
    delivered = state->status;
  }
  // The callback runs before poll/wait see the handle done, so a caller that saw it done also
  // sees the callback's effects. Outside the lock: callbacks may call back into the table.
  if (callback) callback(delivered, state->output);  // not written again: state is completing
  {
    MutexLock lock(mu_);
    finish(handle, *state);
  }
  done_cv_.notify_all();
  return true;
}

void HandleTable::complete_many(const std::vector<Handle>& handles, const Status& status,
                                std::vector<OpOutput>& outputs) {
  std::vector<std::pair<DoneCallback, const OpOutput*>> callbacks;
  std::vector<std::pair<Handle, State*>> claimed;  // this call's to finish (others may hold the rest)
  claimed.reserve(handles.size());
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < handles.size(); ++i) {
      State* state = find(handles[i]);
      if (!state || state->done || state->completing) continue;
      claimed.emplace_back(handles[i], state);
      state->completing = true;
      state->status = status;
      if (!outputs.empty()) state->output = std::move(outputs[i]);
      if (state->on_done) callbacks.emplace_back(std::move(state->on_done), &state->output);
    }
  }
  if (claimed.empty()) return;
  // As in complete(): callbacks outside the lock, before anyone can see their handle done.
  for (const auto& [callback, output] : callbacks) callback(status, *output);
  {
    MutexLock lock(mu_);
    for (auto [h, state] : claimed) finish(h, *state);
  }
  done_cv_.notify_all();
}

void HandleTable::fail_all_pending(const Status& status) {
  std::vector<Handle> pending;
  {
    MutexLock lock(mu_);
    for (const auto& [h, state] : states_) {
      if (!state.done && !state.completing) pending.push_back(h);
    }
  }
  for (Handle h : pending) complete(h, status);
}

Result<bool> HandleTable::poll(Handle handle) const {
  MutexLock lock(mu_);
  const State* state = find(handle);
  if (!state) return unknown(handle);
  return state->done;
}

Status HandleTable::wait(Handle handle, std::optional<double> timeout_seconds) const {
  MutexLock lock(mu_);
  auto done = [&]() KOROVOD_REQUIRES(mu_) {
    const State* state = find(handle);
    return !state || state->done;
  };
  if (!timeout_seconds) {
    done_cv_.wait(lock, done);
  } else {
    const Env::TimePoint deadline = env_.deadline_after_seconds(*timeout_seconds);
    while (!done()) {
      if (env_.wait_until(done_cv_, lock, deadline) && !done()) return Status::in_progress();
    }
  }
  const State* state = find(handle);
  return state ? state->status : unknown(handle);
}

std::optional<Status> HandleTable::finished_status(Handle handle) const {
  MutexLock lock(mu_);
  const State* state = find(handle);
  if (!state) return unknown(handle);
  if (!state->done) return std::nullopt;
  return state->status;
}

Result<OpOutput> HandleTable::output(Handle handle) const {
  MutexLock lock(mu_);
  const State* state = find(handle);
  if (!state) return unknown(handle);
  if (!state->done) return Status::in_progress();
  if (!state->status.is_ok()) return state->status;
  return state->output;
}

void HandleTable::release(Handle handle) {
  MutexLock lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) return;
  if (it->second.completing && !it->second.done) {
    it->second.released = true;  // its completer erases it when done
    return;
  }
  states_.erase(it);
}

void HandleTable::detach(Handle handle) {
  MutexLock lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) return;
  if (it->second.done) {
    states_.erase(it);
  } else {
    it->second.released = true;  // finish() erases it
  }
}

}  // namespace korovod
