// The C++ API of the worker runtime. One Runtime per process group owns everything (queue,
// negotiation, fusion buffer, timeline, background thread); there are no globals. Operations are
// asynchronous: enqueue returns a Handle, completed by the background thread; poll/wait on it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "korovod/config.h"
#include "korovod/env.h"
#include "korovod/status.h"
#include "korovod/transport.h"
#include "korovod/types.h"

namespace korovod {

using Handle = int64_t;
struct OpOutput;
// The op's status and, when it succeeded, its output (what Runtime::output will return).
using DoneCallback = std::function<void(const Status&, const OpOutput&)>;
// Allocates the output of allgather/alltoall/reducescatter once its shape is known. Without one,
// the runtime keeps the output in storage owned by the handle (see Runtime::output).
using OutputAllocator = std::function<Result<void*>(const std::vector<int64_t>& shape)>;
using LogSink = std::function<void(LogLevel, const std::string&)>;

inline constexpr int kGlobalProcessSet = 0;

// The framework's signal that a tensor's data is ready (Horovod's ReadyEvent): for a GPU tensor,
// typically a CUDA event recorded on the framework's stream right after the kernel that produced
// it (korovod/cuda.h records one). The engine polls it on the thread that runs the collective,
// after negotiation and before the data plane reads the tensor, so a collective never reads data
// the framework's stream has not finished writing.
class ReadyEvent {
 public:
  virtual ~ReadyEvent() = default;
  // true once the data is ready; an error (a failed CUDA event) stops the engine.
  virtual Result<bool> ready() const = 0;
};

struct CollectiveArgs {
  RequestType type = RequestType::kAllreduce;
  std::string name;            // "" -> "<op>.noname.<handle>"
  TensorView input;
  TensorView output;           // allreduce/broadcast: required (may alias input)
  ReduceOp op = ReduceOp::kAverage;
  double prescale = 1.0;
  double postscale = 1.0;
  int root_rank = 0;           // broadcast: a global rank inside the process set
  std::vector<int32_t> splits; // alltoall: rows sent to each set rank; empty = even split
  int process_set = kGlobalProcessSet;
  DoneCallback on_done;        // on the background thread when the op ends, before poll/wait report
                               // the handle done (so it must not wait on its own handle)
  OutputAllocator allocator;
  std::shared_ptr<const ReadyEvent> ready_event;  // optional: wait for it before reading input
};

struct OpOutput {
  void* data = nullptr;                  // allocator's pointer or handle-owned storage
  std::vector<int64_t> shape;
  std::vector<int32_t> received_splits;  // alltoall
  int last_joined_rank = -1;             // join
};

// The engine's executor of agreed responses is a seam the runtime's builder fills: the engine
// (src/core) knows only its interface, the executor (src/algorithms) sits above it with the
// collectives. The two types are internal (src/core/response_executor.h) and only declared here,
// so that this header names no internal header; tcp_runtime_options and mpi_runtime_options fill
// RuntimeOptions::make_executor, and a RuntimeOptions built by hand (the tests) takes
// korovod::make_executor from src/algorithms/executor.h.
class ResponseExecutor;
struct ExecutorParts;
using ExecutorFactory = std::function<std::unique_ptr<ResponseExecutor>(const ExecutorParts&)>;

struct RuntimeOptions {
  Config config;
  std::shared_ptr<TransportProvider> transport;            // control plane (required)
  std::vector<std::shared_ptr<BackendProvider>> backends;  // data planes, first enabled wins
  std::vector<std::vector<int>> process_sets;              // static sets, ids 1..n
  std::shared_ptr<Env> env;                                // time, waits, files, host; null = SystemEnv
  LogSink log_sink;                                        // null = stderr
  ExecutorFactory make_executor;                           // required; called once, by the engine
};

class CycleDriver;

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> create(RuntimeOptions options);
  ~Runtime();  // shuts down if still running
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Stops the background thread after telling every rank (Horovod: any rank's shutdown ends
  // the job's loop). Pending operations fail with kAborted. Idempotent.
  Status shutdown();
  bool is_initialized() const;

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  int cross_rank() const;
  int cross_size() const;
  bool is_homogeneous() const;
  // Elastic mode: the driver's round this runtime joined (docs/elastic.md); 0 otherwise.
  int64_t elastic_round() const;
  std::string transport_name() const;
  std::vector<std::string> backend_names() const;
  const Config& config() const;

  // ---- collectives (all return a Handle; errors of the call itself come back at once) ----
  Result<Handle> enqueue(CollectiveArgs args);
  // All or none are queued, in one step, so they negotiate and fuse together.
  Result<std::vector<Handle>> enqueue_group(std::vector<CollectiveArgs> args);

  Result<Handle> allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                           ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                           double postscale = 1.0, int process_set = kGlobalProcessSet);
  Result<Handle> allgather(const std::string& name, const TensorView& input,
                           int process_set = kGlobalProcessSet);
  Result<Handle> broadcast(const std::string& name, const TensorView& tensor, int root_rank,
                           int process_set = kGlobalProcessSet);
  Result<Handle> alltoall(const std::string& name, const TensorView& input,
                          std::vector<int32_t> splits = {}, int process_set = kGlobalProcessSet);
  Result<Handle> reducescatter(const std::string& name, const TensorView& input,
                               ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                               double postscale = 1.0, int process_set = kGlobalProcessSet);
  Result<Handle> barrier(int process_set = kGlobalProcessSet);
  // Joined ranks contribute zeros to allreduce (nothing to allgather) until every rank joined;
  // the output's last_joined_rank is the rank that joined last.
  Result<Handle> join(int device = kCpuDevice);
  Result<std::vector<Handle>> grouped_allreduce(const std::vector<std::string>& names,
                                                const std::vector<TensorView>& inputs,
                                                const std::vector<TensorView>& outputs,
                                                ReduceOp op = ReduceOp::kAverage,
                                                double prescale = 1.0, double postscale = 1.0,
                                                int process_set = kGlobalProcessSet);

  // ---- handles ----
  Result<bool> poll(Handle handle) const;   // true when done (successfully or not)
  Status wait(Handle handle) const;         // the operation's status
  Status wait_for(Handle handle, double timeout_seconds) const;  // kInProgress on timeout
  // The Env every wait of this runtime runs on (RuntimeOptions::env): callers that wait for
  // several handles under one bound take their deadline from it (korovod_wait_all).
  Env& env() const;
  Result<OpOutput> output(Handle handle) const;
  void release(Handle handle);              // forget a finished handle and its owned output
  // Nobody will wait for it: forgotten once done. The op's on_done callback reports its outcome.
  void detach(Handle handle);

  // ---- process sets (dynamic ones need KOROVOD_DYNAMIC_PROCESS_SETS=1 and the same call order
  // on every rank; the call blocks until all ranks made it) ----
  Result<int> add_process_set(std::vector<int> ranks);
  Status remove_process_set(int id);
  std::vector<int> process_set_ids() const;
  Result<std::vector<int>> process_set_ranks(int id) const;
  Result<int> process_set_rank(int id) const;  // -1 when this rank is not a member
  Result<int> process_set_size(int id) const;

  // ---- timeline (rank 0 writes; a no-op elsewhere) ----
  Status start_timeline(const std::string& path, bool mark_cycles);
  Status stop_timeline();

 private:
  explicit Runtime(std::shared_ptr<CycleDriver> impl);
  std::shared_ptr<CycleDriver> impl_;
};

// Build queries (what this library was compiled with).
bool mpi_built();
bool nccl_built();
bool gloo_built();
bool cuda_built();

}  // namespace korovod
