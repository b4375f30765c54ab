/* C ABI of the korovod worker runtime: what the Python package (ctypes) and other languages call.
 *
 * Handle based: every call takes the korovod_runtime* returned by korovod_init*; operations
 * return a handle (>0) or a negative error code; the error text of the last failed call on a
 * runtime is korovod_last_error() (kept per calling thread: several threads may call at once),
 * the text of a failed operation korovod_handle_error(). Queries on a NULL runtime return -1
 * (Horovod: -1 before init); other calls on a NULL or shut-down runtime fail with
 * KOROVOD_ERR_NOT_INITIALIZED.
 *
 * libkorovod.so itself never links MPI. When a job was started by mpirun (or an MPI
 * communicator is passed in), korovod_init loads libkorovod_mpi.so from libkorovod.so's own
 * directory (it links libmpi); on a machine without MPI only that path is unavailable. */
#ifndef KOROVOD_C_API_H_
#define KOROVOD_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct korovod_runtime korovod_runtime;
typedef struct korovod_group korovod_group;
typedef struct korovod_event korovod_event;

/* Error codes (negative). */
enum {
  KOROVOD_OK = 0,
  KOROVOD_ERR_INVALID_ARGUMENT = -1, /* bad call: dtype/shape, duplicate name, unknown set (Python: ValueError) */
  KOROVOD_ERR_PRECONDITION = -2,     /* ranks disagree: shape, dtype, op, root (Python: RuntimeError) */
  KOROVOD_ERR_ABORTED = -3,          /* shut down, peer lost, timed out (Python: HorovodInternalError) */
  KOROVOD_ERR_UNKNOWN = -4,          /* transport failure (Python: HorovodInternalError) */
  KOROVOD_ERR_IN_PROGRESS = -5,      /* korovod_wait_for: not done within the timeout */
  KOROVOD_ERR_NOT_INITIALIZED = -6,
};

/* Values match korovod::DataType / ReduceOp / RequestType. */
enum { KOROVOD_UINT8 = 0, KOROVOD_INT8, KOROVOD_UINT16, KOROVOD_INT16, KOROVOD_INT32, KOROVOD_INT64,
       KOROVOD_FLOAT16, KOROVOD_FLOAT32, KOROVOD_FLOAT64, KOROVOD_BOOL, KOROVOD_BFLOAT16 };
enum { KOROVOD_AVERAGE = 0, KOROVOD_SUM = 1, KOROVOD_ADASUM = 2, KOROVOD_MIN = 3, KOROVOD_MAX = 4,
       KOROVOD_PRODUCT = 5 };
enum { KOROVOD_OP_ALLREDUCE = 0, KOROVOD_OP_ALLGATHER = 1, KOROVOD_OP_BROADCAST = 2, KOROVOD_OP_JOIN = 3,
       KOROVOD_OP_ALLTOALL = 5, KOROVOD_OP_BARRIER = 6, KOROVOD_OP_REDUCESCATTER = 7 };

/* How korovod_init_ex starts the job's control plane. */
enum {
  KOROVOD_CONTROLLER_AUTO = 0, /* mpi_comm or comm_ranks given -> MPI; else rendezvous env
                                  (KOROVOD_/HOROVOD_GLOO_RENDEZVOUS_ADDR) -> TCP; else started by
                                  mpirun (korovod_launched_by_mpi) -> MPI; else a world of one rank,
                                  this process (no MPI, no network: loopback only) */
  KOROVOD_CONTROLLER_MPI = 1,  /* MPI (fails with a message naming the missing library without it) */
  KOROVOD_CONTROLLER_TCP = 2,  /* the rendezvous store named by the environment */
};

typedef struct {
  void* data;
  int32_t dtype;
  int32_t ndim;
  const int64_t* shape;
  int32_t device; /* -1 = CPU */
} korovod_tensor;

typedef struct {
  int32_t controller;      /* KOROVOD_CONTROLLER_* */
  const void* mpi_comm;    /* an MPI_Comm* (e.g. mpi4py's MPI._addressof(comm)); NULL = world */
  const int32_t* comm_ranks; /* Horovod's init(comm=[ranks]): run on these ranks of the world only */
  int32_t num_comm_ranks;  /* 0 = every rank */
  const int32_t* set_ranks; /* static process sets as concatenated rank lists ... */
  const int32_t* set_sizes; /* ... set i has set_sizes[i] ranks; they get ids 1..num_sets */
  int32_t num_sets;
} korovod_init_options;

/* ---- library ---- */
const char* korovod_version(void);
/* 1 when the environment says an MPI launcher started this process: one of OMPI_COMM_WORLD_SIZE
 * (Open MPI), PMIX_RANK (PMIx: Open MPI 5, srun --mpi=pmix), PMI_RANK / PMI_SIZE (Hydra: MPICH,
 * Intel MPI; srun --mpi=pmi2), MPI_LOCALNRANKS (Hydra) is set. */
int korovod_launched_by_mpi(void);
/* 1 when libkorovod_mpi.so and the MPI library it links can be loaded here (this loads them);
 * otherwise 0 and, when why is not NULL, the loader's message. */
int korovod_mpi_available(char* why, int why_len);

/* ---- lifecycle ----
 * Config comes from the environment (KOROVOD_* / HOROVOD_*). On failure *out is NULL, the return
 * value is an error code and the text is copied (NUL-terminated, truncated) into error_text. */
int korovod_init_ex(korovod_runtime** out, const korovod_init_options* options, char* error_text,
                    int error_len);
/* Same as korovod_init_ex with KOROVOD_CONTROLLER_AUTO. */
int korovod_init(korovod_runtime** out, const void* mpi_comm, const int* set_ranks,
                 const int* set_sizes, int num_sets, char* error_text, int error_len);
/* Stops the engine and frees what it held (sockets, a rendezvous store it hosted), so the process
 * can init again; rt stays valid for the rank/size/name queries until korovod_destroy. Outputs
 * already taken as DLPack tensors stay valid. MPI is finalized only at process exit, and only
 * when korovod initialised it. */
int korovod_shutdown(korovod_runtime* rt);
void korovod_destroy(korovod_runtime* rt); /* shuts down if needed and frees rt */
int korovod_is_initialized(const korovod_runtime* rt);
const char* korovod_last_error(const korovod_runtime* rt);

/* ---- elastic mode (docs/elastic.md) ----
 * korovodrun --min-np/--max-np/--host-discovery-script starts every worker with KOROVOD_ELASTIC=1
 * and KOROVOD_ELASTIC_WORKER_ID, and hosts the rendezvous store where it publishes rounds. Each
 * korovod_init joins the driver's newest round that is newer than the last round this worker
 * attempted (waiting for it up to KOROVOD_ELASTIC_TIMEOUT s, default 600): rank, size, local and
 * cross ranks are the driver's assignment. A worker the driver removed fails its init with
 * KOROVOD_ERR_PRECONDITION; no new round in time fails it with KOROVOD_ERR_ABORTED. A reset is
 * korovod_shutdown then korovod_init on a new korovod_runtime. A lost peer (killed, exited, or
 * stopped past KOROVOD_COLLECTIVE_TIMEOUT_SECONDS) fails every survivor's pending and later
 * operations with KOROVOD_ERR_ABORTED or KOROVOD_ERR_UNKNOWN (both HorovodInternalError), the
 * text naming the lost rank and its host ("rank 2 on host worker-1"). */
/* 1 when KOROVOD_ELASTIC (or HOROVOD_ELASTIC) is set to a true value in the environment. */
int korovod_elastic_enabled(void);
/* The driver's round this runtime joined (>= 1); 0 when it is not elastic; -1 for NULL. */
int64_t korovod_elastic_round(const korovod_runtime* rt);
/* The driver's host-change counter and its kind bitmask (1 hosts added, 2 hosts removed, 3 both)
 * from the store's elastic/hosts_version and elastic/hosts_kind, 0 and 0 while the driver has
 * set neither. Opens a connection of its own to the store (the environment's address and job
 * secret), so it works with or without a running runtime. KOROVOD_ERR_PRECONDITION when not
 * elastic; a store that cannot be reached: KOROVOD_ERR_UNKNOWN. error_text as for korovod_init. */
int korovod_elastic_hosts_version(uint64_t* version, uint32_t* kind, char* error_text, int error_len);
/* The driver's newest published round (elastic/round; 0 while unset), the same way. A reset is
 * due exactly when it is newer than korovod_elastic_round of the running runtime. */
int korovod_elastic_published_round(uint64_t* round, char* error_text, int error_len);

/* ---- hosting the rendezvous ----
 * For a program that starts the ranks itself (korovod.spark's and korovod.ray's drivers, as
 * korovodrun does for its own): the job's TCP rendezvous store, served on a thread of this
 * process. Ranks started with KOROVOD_RENDEZVOUS_SERVER=external, KOROVOD_RENDEZVOUS_ADDR (an
 * address of this host they can reach), KOROVOD_RENDEZVOUS_PORT = korovod_rendezvous_port,
 * KOROVOD_RANK, KOROVOD_SIZE and KOROVOD_JOB_SECRET = job_secret meet there at korovod_init.
 * listen_host: a numeric IPv4 address ("0.0.0.0": every interface); port 0: an ephemeral one.
 * job_secret (NUL-terminated, at least 16 bytes) is required: every connection proves it before
 * the store answers; refused connections are logged on stderr with their address. On failure
 * (a bad argument or secret: KOROVOD_ERR_INVALID_ARGUMENT; the port taken: KOROVOD_ERR_UNKNOWN)
 * *out is NULL and error_text says why, never showing the secret. */
typedef struct korovod_rendezvous korovod_rendezvous;
int korovod_rendezvous_start(korovod_rendezvous** out, const char* listen_host, int port, const char* job_secret,
                             char* error_text, int error_len);
int korovod_rendezvous_port(const korovod_rendezvous* r); /* -1 for NULL */
/* Closes every connection, stops the thread and frees r (NULL: nothing). Call it once the ranks
 * have shut down: they keep a connection to the store while they run. */
void korovod_rendezvous_stop(korovod_rendezvous* r);

/* ---- driving an elastic job ----
 * For a program that starts the workers itself (korovod.spark's run_elastic, korovod.ray's
 * elastic RayExecutor): korovodrun's elastic driver (docs/elastic.md), which decides the rounds
 * (who is in, with which rank), publishes them in the job's store and tells the caller, through
 * `world`, which workers to start and stop. No threads: the caller calls tick() when it is due
 * and reports every worker's exit; every callback runs inside those calls, on the caller's
 * thread. A worker is `host` + `slot` (its KOROVOD_ELASTIC_WORKER_ID is "<host>:<slot>"); start
 * it with KOROVOD_ELASTIC=1, that id, KOROVOD_HOSTNAME = KOROVOD_HOST_ID = host and the store's
 * rendezvous variables (as korovod_rendezvous_start's ranks, without KOROVOD_RANK/SIZE). */
typedef struct korovod_elastic_driver korovod_elastic_driver;
/* The hosts available now, one "host:slots" line each, NUL-terminated in buf (at most len bytes);
 * 0, or nonzero with why in buf (the driver says it and keeps the last hosts). */
typedef int (*korovod_elastic_discover_fn)(void* context, char* buf, int len);
/* Starts worker host:slot (its round is already published); 0, or nonzero with why in error_text
 * (counted as that worker failing). Its exit comes back through
 * korovod_elastic_driver_worker_exited. */
typedef int (*korovod_elastic_start_fn)(void* context, const char* host, int slot, char* error_text, int error_len);
/* Ends worker host:slot (it left the round, or the job is over); its exit is still reported. */
typedef void (*korovod_elastic_stop_fn)(void* context, const char* host, int slot);
/* A line for the job's console ("round 2: 2 workers (...)"). */
typedef void (*korovod_elastic_say_fn)(void* context, const char* line);
typedef struct {
  void* context; /* passed to each callback */
  korovod_elastic_discover_fn discover;
  korovod_elastic_start_fn start_worker;
  korovod_elastic_stop_fn stop_worker;
  korovod_elastic_say_fn say;
} korovod_elastic_world;
typedef struct {
  int32_t start_np;                 /* slots to wait for before round 1 (>= min_np) */
  int32_t min_np;                   /* >= 1 */
  int32_t max_np;                   /* 0: no limit */
  int32_t reset_limit;              /* -1: no limit */
  int32_t blacklist_after_failures; /* a slot's failures in a row that blacklist its host (>= 1) */
  int32_t cooldown_min_seconds;     /* 0 and 0: a blacklisted host stays out; else Horovod's range */
  int32_t cooldown_max_seconds;
  double elastic_timeout_seconds;   /* > 0 */
  double discovery_interval_seconds; /* > 0 (Horovod: 1) */
  int32_t verbose;
  /* How the driver's messages name the limits (the caller's own argument names, e.g.
   * "elastic_timeout"); NULL: korovodrun's flags (--elastic-timeout, -np, --min-np, --reset-limit). */
  const char* elastic_timeout_name;
  const char* start_np_name;
  const char* min_np_name;
  const char* reset_limit_name;
} korovod_elastic_options;
/* Connects to the job's store at store_address:store_port with job_secret (a
 * korovod_rendezvous_start of this process, or any korovod store). Bad options:
 * KOROVOD_ERR_INVALID_ARGUMENT naming the field; no store: KOROVOD_ERR_UNKNOWN. The world's
 * callbacks and context must outlive the driver. */
int korovod_elastic_driver_new(korovod_elastic_driver** out, const korovod_elastic_options* options,
                               const korovod_elastic_world* world, const char* store_address, int store_port,
                               const char* job_secret, char* error_text, int error_len);
/* Does what is due (discovery, readiness, a new round, the end); returns the seconds until it is
 * due again (>= 0). */
double korovod_elastic_driver_tick(korovod_elastic_driver* d);
/* Worker host:slot's process ended with exit_code (0: its function returned). */
void korovod_elastic_driver_worker_exited(korovod_elastic_driver* d, const char* host, int slot, int exit_code);
/* 1 once the job is over (stop every worker still running), with its exit code (0: training
 * finished) and why it failed in message; 0 while it runs; -1 for NULL. */
int korovod_elastic_driver_outcome(const korovod_elastic_driver* d, int* exit_code, char* message, int len);
/* The current round (0 before the first) and worker host:slot's rank in it (-1: not a member). */
int korovod_elastic_driver_round(const korovod_elastic_driver* d);
int korovod_elastic_driver_rank_of(const korovod_elastic_driver* d, const char* host, int slot);
void korovod_elastic_driver_free(korovod_elastic_driver* d); /* NULL: nothing */

/* ---- queries ---- */
int korovod_rank(const korovod_runtime* rt);
int korovod_size(const korovod_runtime* rt);
int korovod_local_rank(const korovod_runtime* rt);
int korovod_local_size(const korovod_runtime* rt);
int korovod_cross_rank(const korovod_runtime* rt);
int korovod_cross_size(const korovod_runtime* rt);
int korovod_is_homogeneous(const korovod_runtime* rt);
int korovod_mpi_built(void);          /* libkorovod_mpi.so was built (next to libkorovod.so) */
int korovod_mpi_enabled(const korovod_runtime* rt); /* this runtime's control plane is MPI */
int korovod_mpi_threads_supported(void); /* MPI initialised with MPI_THREAD_MULTIPLE */
int korovod_nccl_built(void);         /* NCCL_VERSION_CODE, 0 without NCCL */
int korovod_gloo_built(void);         /* 1: the TCP control plane (Horovod's Gloo mode) is built */
int korovod_cuda_built(void);
/* Control plane and data planes in use, e.g. "TCP" and "SHM,TCP" (comma separated). */
const char* korovod_transport_name(const korovod_runtime* rt);
const char* korovod_backend_names(const korovod_runtime* rt);

/* ---- operations ----
 * One call for every collective (type = KOROVOD_OP_*), flat arguments so a binding builds no
 * struct per call:
 *   name      NULL -> "<op>.noname.<handle>"
 *   input     tensor data (contiguous; CPU, or CUDA memory when device >= 0), dtype/ndim/shape
 *   output    allreduce/broadcast: where the result goes (NULL or equal to input: in place; same
 *             dtype, shape and device as input); allgather/alltoall/reducescatter: must be NULL,
 *             the runtime allocates it on the input's device (korovod_handle_take_dlpack /
 *             korovod_handle_output)
 *   op, prescale, postscale  allreduce/reducescatter
 *   root_rank broadcast (a global rank)
 *   splits    alltoall: rows to each rank of the set (num_splits = set size); NULL = even
 *   ready     optional; consumed (freed by the runtime, also on error)
 * Join and barrier ignore the tensor arguments (device is join's device).
 * Returns a handle > 0 or an error code (korovod_last_error has the text). */
int64_t korovod_enqueue(korovod_runtime* rt, int type, const char* name, void* input, void* output, int dtype,
                        int ndim, const int64_t* shape, int device, int op, double prescale,
                        double postscale, int root_rank, const int32_t* splits, int num_splits,
                        int process_set, korovod_event* ready);

/* Grouped operations: ops added to a group are queued all or none, in one step, so they negotiate
 * and fuse together (Horovod's grouped_allreduce/allgather/reducescatter); one process set per
 * group. korovod_group_add checks what it can at once (returns 0 or an error code; a group with
 * a failed add fails its next korovod_group_enqueue with that error, whose text is then in
 * korovod_last_error). */
korovod_group* korovod_group_new(void);
int korovod_group_add(korovod_group* group, int type, const char* name, void* input, void* output, int dtype,
                      int ndim, const int64_t* shape, int device, int op, double prescale,
                      double postscale, int root_rank, const int32_t* splits, int num_splits,
                      int process_set, korovod_event* ready);
/* Enqueues every op added since the last enqueue; writes one handle per op, in order, to
 * handles_out. Returns 0 or an error code (then nothing was queued). Either way the group is then
 * empty and reusable, and the ready events of its ops are consumed. */
int korovod_group_enqueue(korovod_runtime* rt, korovod_group* group, int64_t* handles_out, int max_handles);
void korovod_group_free(korovod_group* group);

/* Many independent operations in one call: a binding's batch of ready tensors (gradients as
 * backward produces them), at the cost of one call rather than one per tensor. Each op is queued
 * as korovod_enqueue would queue it -- negotiated, fused and completed on its own, not as a
 * group, so ranks may batch the same ops differently -- in array order. type: KOROVOD_OP_ALLREDUCE,
 * _ALLGATHER or _REDUCESCATTER (the others take arguments this call has not; use
 * korovod_enqueue); one process set for all. Per-op arrays of `count` entries:
 *   names     NULL (the array or an entry) -> "<op>.noname.<handle>"
 *   inputs, dtypes, ndims, shapes (shapes[i]: ndims[i] dims; may be NULL when ndims[i] is 0)
 *   outputs   allreduce: NULL (the array or an entry) = in place; others: must be NULL (array)
 *   devices   NULL = every input on the CPU (-1)
 *   ops, prescales, postscales  NULL = KOROVOD_AVERAGE, 1.0, 1.0
 *   ready     NULL = none; every event is consumed, also on error
 * handles_out (count entries) gets one handle per op. Returns count when every op was queued.
 * Otherwise an error code (korovod_last_error names the argument, or the tensor and its index):
 * for bad arguments nothing was queued (handles_out all 0); when the runtime refused op i (a
 * duplicate name, say), ops 0..i-1 stay queued with their handles in handles_out and the rest
 * are 0 -- the caller waits for and releases those as usual. */
int korovod_enqueue_many(korovod_runtime* rt, int type, int count, const char* const* names, void* const* inputs,
                         void* const* outputs, const int32_t* dtypes, const int32_t* ndims,
                         const int64_t* const* shapes, const int32_t* devices, const int32_t* ops,
                         const double* prescales, const double* postscales, int process_set,
                         korovod_event* const* ready, int64_t* handles_out);

/* Completion by callback, for a framework's asynchronous kernels (TensorFlow's AsyncOpKernel),
 * which must not hold a thread while a collective runs. Queues one op as korovod_enqueue does;
 * then, on the runtime's background thread when the op ends, calls done(arg, &result) exactly
 * once -- possibly before korovod_enqueue_async has returned. There is no handle to wait for or
 * release. For allgather, alltoall and reducescatter (whose output size only negotiation tells)
 * alloc is required: the runtime calls alloc(arg, ndim, shape, &data) once, on the background
 * thread, for where to write the output (the input's dtype and device; data may be NULL for an
 * empty output); nonzero fails the op and stops the runtime, as any failed output allocation does
 * (the other ranks cannot finish the collective without this one). Other ops take alloc NULL and write to
 * `output` as korovod_enqueue's. The result's pointers are valid during the call only.
 * Returns 0 when queued, or an error code (korovod_last_error has the text; done is never
 * called). */
typedef struct {
  int32_t status;                  /* 0 or the op's error code (KOROVOD_ERR_*) */
  const char* error_text;          /* "" on success; names the tensor and the ranks */
  const int32_t* received_splits;  /* alltoall: rows received from each rank of the set */
  int32_t num_received_splits;
  int32_t last_joined_rank;        /* join; -1 otherwise */
} korovod_op_result;
typedef int (*korovod_alloc_fn)(void* arg, int ndim, const int64_t* shape, void** data);
typedef void (*korovod_done_fn)(void* arg, const korovod_op_result* result);
int korovod_enqueue_async(korovod_runtime* rt, int type, const char* name, void* input, void* output, int dtype,
                          int ndim, const int64_t* shape, int device, int op, double prescale,
                          double postscale, int root_rank, const int32_t* splits, int num_splits,
                          int process_set, korovod_event* ready, korovod_alloc_fn alloc,
                          korovod_done_fn done, void* arg);

/* Ready events (Horovod's ReadyEvent): a CUDA event recorded on `stream` (a cudaStream_t, NULL =
 * the legacy default stream) of `device`; the collective reads the tensor only once the stream
 * passed it. NULL on failure (without CUDA: always) with the reason in error_text. */
korovod_event* korovod_cuda_event_record(int device, void* stream, char* error_text, int error_len);
void korovod_event_free(korovod_event* event);

/* Legacy per-op entry points (same semantics as korovod_enqueue). */
int64_t korovod_allreduce(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                          const korovod_tensor* output, int op, double prescale, double postscale,
                          int process_set);
int64_t korovod_allgather(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                          int process_set);
int64_t korovod_broadcast(korovod_runtime* rt, const char* name, const korovod_tensor* tensor,
                          int root_rank, int process_set);
int64_t korovod_alltoall(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                         const int32_t* splits, int num_splits, int process_set);
int64_t korovod_reducescatter(korovod_runtime* rt, const char* name, const korovod_tensor* input, int op,
                              double prescale, double postscale, int process_set);
int64_t korovod_barrier(korovod_runtime* rt, int process_set);
int64_t korovod_join(korovod_runtime* rt, int device);
int korovod_grouped_allreduce(korovod_runtime* rt, const char* const* names, const korovod_tensor* inputs,
                              const korovod_tensor* outputs, int n, int op, double prescale,
                              double postscale, int process_set, int64_t* handles_out);

/* ---- handles ----
 * poll: 1 done, 0 pending, <0 error. wait: 0 or the op's error code, blocking (without the
 * caller's lock: bindings call it with their interpreter lock released). wait_for: the same,
 * or KOROVOD_ERR_IN_PROGRESS after timeout_seconds (< 0: no limit). A failed wait also sets
 * korovod_last_error. */
int korovod_poll(korovod_runtime* rt, int64_t handle);
int korovod_wait(korovod_runtime* rt, int64_t handle);
int korovod_wait_for(korovod_runtime* rt, int64_t handle, double timeout_seconds);
const char* korovod_handle_error(korovod_runtime* rt, int64_t handle); /* valid until release */
/* Waits for `count` handles in one call (same semantics as korovod_wait_for for each, within one
 * overall timeout; < 0: no limit), also after one of them failed, so none is left running.
 * statuses (NULL or count entries) gets each op's outcome: 0, its error code, or
 * KOROVOD_ERR_IN_PROGRESS when not done by the deadline. Returns KOROVOD_ERR_IN_PROGRESS when
 * any op was not done by the deadline, else 0 when all succeeded, else the error code of the
 * first failed op in array order (korovod_last_error: its text; korovod_handle_error has each
 * failed op's). count 0 returns 0. */
int korovod_wait_all(korovod_runtime* rt, const int64_t* handles, int count, double timeout_seconds,
                     int32_t* statuses);

/* Output the runtime allocated (allgather/alltoall/reducescatter; owned by the handle until
 * release or take): data, ndim, and up to max_dims dims into shape. An error once taken. */
int korovod_handle_output(korovod_runtime* rt, int64_t handle, void** data, int* ndim, int64_t* shape,
                          int max_dims);
/* Moves that output out of the handle, without a copy, into a DLPack DLManagedTensor (the DLPack
 * 0.x ABI every framework's from_dlpack accepts, as a "dltensor" capsule) with the given DLPack
 * type (code, bits, lanes 1; bits must match the op's dtype): kDLCPU for a CPU input, kDLCUDA on
 * the input's device for a GPU input. Its deleter frees the memory, whether or not the runtime
 * still exists (after release, shutdown and destroy too). NULL, with the text in
 * korovod_last_error, when the handle has no runtime-allocated output, is not done, failed
 * (its error), or was taken already. Works after korovod_shutdown until release/destroy. */
void* korovod_handle_take_dlpack(korovod_runtime* rt, int64_t handle, int dl_code, int dl_bits);
void korovod_dlpack_delete(void* managed_tensor); /* calls the deleter (for an unconsumed capsule) */
int korovod_handle_received_splits(korovod_runtime* rt, int64_t handle, int32_t* splits, int max_splits);
int korovod_handle_last_joined_rank(korovod_runtime* rt, int64_t handle);
void korovod_release(korovod_runtime* rt, int64_t handle);
void korovod_release_many(korovod_runtime* rt, const int64_t* handles, int count); /* each as korovod_release */

/* ---- process sets ----
 * add returns the new id (>= 0) or an error code (dynamic sets need KOROVOD_DYNAMIC_PROCESS_SETS=1;
 * every rank calls it in the same order). ids/ranks write up to max entries and return the count. */
int korovod_add_process_set(korovod_runtime* rt, const int* ranks, int nranks);
int korovod_remove_process_set(korovod_runtime* rt, int id);
int korovod_process_set_rank(korovod_runtime* rt, int id);
int korovod_process_set_size(korovod_runtime* rt, int id);
int korovod_process_set_included(korovod_runtime* rt, int id);
int korovod_process_set_ids(korovod_runtime* rt, int* ids, int max_ids);
int korovod_process_set_ranks(korovod_runtime* rt, int id, int* ranks, int max_ranks);

/* ---- timeline (rank 0 writes) ---- */
int korovod_start_timeline(korovod_runtime* rt, const char* path, int mark_cycles);
int korovod_stop_timeline(korovod_runtime* rt);

#ifdef __cplusplus
}
#endif

#endif /* KOROVOD_C_API_H_ */
