// korovod::Runtime: the public facade over the cycle driver (core/cycle_driver.h) and its engine
// (core/engine.h).
#include "korovod/runtime.h"

#include "core/cycle_driver.h"

namespace korovod {

Result<std::unique_ptr<Runtime>> Runtime::create(RuntimeOptions options) {
  if (!options.transport) return Status::invalid_argument("RuntimeOptions.transport is required");
  if (!options.make_executor) {
    return Status::invalid_argument(
        "RuntimeOptions.make_executor is required (korovod::make_executor, src/algorithms/executor.h)");
  }
  auto impl = std::make_shared<CycleDriver>(std::move(options));
  KOROVOD_RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Runtime::Runtime(std::shared_ptr<CycleDriver> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() { (void)impl_->shutdown(); }

Status Runtime::shutdown() { return impl_->shutdown(); }
bool Runtime::is_initialized() const { return impl_->running(); }
int Runtime::rank() const { return impl_->engine().world().rank; }
int Runtime::size() const { return impl_->engine().world().size; }
int Runtime::local_rank() const { return impl_->engine().world().local_rank; }
int Runtime::local_size() const { return impl_->engine().world().local_size; }
int Runtime::cross_rank() const { return impl_->engine().world().cross_rank; }
int Runtime::cross_size() const { return impl_->engine().world().cross_size; }
bool Runtime::is_homogeneous() const { return impl_->engine().world().homogeneous; }
int64_t Runtime::elastic_round() const { return impl_->engine().world().elastic_round; }
std::string Runtime::transport_name() const { return impl_->engine().transport_name(); }
std::vector<std::string> Runtime::backend_names() const { return impl_->engine().backend_names(); }
const Config& Runtime::config() const { return impl_->engine().config(); }

Result<Handle> Runtime::enqueue(CollectiveArgs args) { return impl_->enqueue_one(std::move(args)); }

Result<std::vector<Handle>> Runtime::enqueue_group(std::vector<CollectiveArgs> args) {
  return impl_->enqueue(std::move(args));
}

Result<Handle> Runtime::allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                                  ReduceOp op, double prescale, double postscale, int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kAllreduce;
  a.name = name;
  a.input = input;
  a.output = output;
  a.op = op;
  a.prescale = prescale;
  a.postscale = postscale;
  a.process_set = process_set;
  return impl_->enqueue_one(std::move(a));
}

Result<Handle> Runtime::allgather(const std::string& name, const TensorView& input, int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kAllgather;
  a.name = name;
  a.input = input;
  a.process_set = process_set;
  return enqueue(std::move(a));
}

Result<Handle> Runtime::broadcast(const std::string& name, const TensorView& tensor, int root_rank,
                                  int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kBroadcast;
  a.name = name;
  a.input = tensor;
  a.output = tensor;
  a.root_rank = root_rank;
  a.process_set = process_set;
  return enqueue(std::move(a));
}

Result<Handle> Runtime::alltoall(const std::string& name, const TensorView& input, std::vector<int32_t> splits,
                                 int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kAlltoall;
  a.name = name;
  a.input = input;
  a.splits = std::move(splits);
  a.process_set = process_set;
  return enqueue(std::move(a));
}

Result<Handle> Runtime::reducescatter(const std::string& name, const TensorView& input, ReduceOp op,
                                      double prescale, double postscale, int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kReducescatter;
  a.name = name;
  a.input = input;
  a.op = op;
  a.prescale = prescale;
  a.postscale = postscale;
  a.process_set = process_set;
  return enqueue(std::move(a));
}

Result<Handle> Runtime::barrier(int process_set) {
  CollectiveArgs a;
  a.type = RequestType::kBarrier;
  a.process_set = process_set;
  return enqueue(std::move(a));
}

Result<Handle> Runtime::join(int device) {
  CollectiveArgs a;
  a.type = RequestType::kJoin;
  a.input.device = device;
  return enqueue(std::move(a));
}

Result<std::vector<Handle>> Runtime::grouped_allreduce(const std::vector<std::string>& names,
                                                       const std::vector<TensorView>& inputs,
                                                       const std::vector<TensorView>& outputs, ReduceOp op,
                                                       double prescale, double postscale, int process_set) {
  if (names.size() != inputs.size() || inputs.size() != outputs.size()) {
    return Status::invalid_argument("grouped_allreduce: names, inputs and outputs differ in length");
  }
  std::vector<CollectiveArgs> group(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    group[i].type = RequestType::kAllreduce;
    group[i].name = names[i];
    group[i].input = inputs[i];
    group[i].output = outputs[i];
    group[i].op = op;
    group[i].prescale = prescale;
    group[i].postscale = postscale;
    group[i].process_set = process_set;
  }
  return enqueue_group(std::move(group));
}

Result<bool> Runtime::poll(Handle handle) const { return impl_->poll(handle); }
Status Runtime::wait(Handle handle) const { return impl_->wait(handle, std::nullopt); }
Status Runtime::wait_for(Handle handle, double timeout_seconds) const {
  return impl_->wait(handle, timeout_seconds);
}
Env& Runtime::env() const { return impl_->engine().env(); }
Result<OpOutput> Runtime::output(Handle handle) const { return impl_->engine().handles().output(handle); }
void Runtime::release(Handle handle) { impl_->engine().handles().release(handle); }
void Runtime::detach(Handle handle) { impl_->engine().handles().detach(handle); }

Result<int> Runtime::add_process_set(std::vector<int> ranks) { return impl_->add_process_set(std::move(ranks)); }
Status Runtime::remove_process_set(int id) { return impl_->remove_process_set(id); }
std::vector<int> Runtime::process_set_ids() const { return impl_->engine().process_sets().ids(); }

Result<std::vector<int>> Runtime::process_set_ranks(int id) const {
  auto set = impl_->engine().process_sets().get(id);
  if (!set) return Status::invalid_argument("unknown process set " + std::to_string(id));
  return set->ranks;
}

Result<int> Runtime::process_set_rank(int id) const {
  auto set = impl_->engine().process_sets().get(id);
  if (!set) return Status::invalid_argument("unknown process set " + std::to_string(id));
  return set->set_rank;
}

Result<int> Runtime::process_set_size(int id) const {
  auto set = impl_->engine().process_sets().get(id);
  if (!set) return Status::invalid_argument("unknown process set " + std::to_string(id));
  return static_cast<int>(set->ranks.size());
}

Status Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  return impl_->engine().start_timeline(path, mark_cycles);
}

Status Runtime::stop_timeline() {
  impl_->engine().timeline().stop();
  return Status::ok();
}

// Horovod's Gloo mode (no MPI: HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT, horovodrun --gloo, the Spark and
// Ray runners) is korovod's TCP control plane, which every build has.
bool gloo_built() { return true; }
bool cuda_built() { return false; }
bool nccl_built() { return false; }

}  // namespace korovod
