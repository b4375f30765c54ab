/* C ABI of the korovod worker runtime (for the Python binding and other languages).
 * Handle based: every call takes the korovod_runtime* returned by korovod_init*; operations
 * return a handle (>0) or a negative error code; the error text of the last failed call on a
 * runtime is korovod_last_error(), the text of a failed operation korovod_handle_error().
 * Queries on a NULL runtime return -1 (Horovod: -1 before init). */
#ifndef KOROVOD_C_API_H_
#define KOROVOD_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct korovod_runtime korovod_runtime;

/* Error codes (negative) and Horovod's process-set codes. */
enum {
  KOROVOD_OK = 0,
  KOROVOD_ERR_INVALID_ARGUMENT = -1,
  KOROVOD_ERR_PRECONDITION = -2,
  KOROVOD_ERR_ABORTED = -3,
  KOROVOD_ERR_UNKNOWN = -4,
  KOROVOD_ERR_IN_PROGRESS = -5,
  KOROVOD_ERR_NOT_INITIALIZED = -6,
};

/* Values match korovod::DataType / ReduceOp. */
enum { KOROVOD_UINT8 = 0, KOROVOD_INT8, KOROVOD_UINT16, KOROVOD_INT16, KOROVOD_INT32, KOROVOD_INT64,
       KOROVOD_FLOAT16, KOROVOD_FLOAT32, KOROVOD_FLOAT64, KOROVOD_BOOL, KOROVOD_BFLOAT16 };
enum { KOROVOD_AVERAGE = 0, KOROVOD_SUM = 1, KOROVOD_ADASUM = 2, KOROVOD_MIN = 3, KOROVOD_MAX = 4,
       KOROVOD_PRODUCT = 5 };

typedef struct {
  void* data;
  int32_t dtype;
  int32_t ndim;
  const int64_t* shape;
  int32_t device; /* -1 = CPU */
} korovod_tensor;

/* Init on MPI_COMM_WORLD (mpi_comm NULL) or on *(MPI_Comm*)mpi_comm, with optional static
 * process sets given as concatenated rank lists: set i has set_sizes[i] ranks. Config comes
 * from the environment (KOROVOD_* / HOROVOD_*). On failure *out is NULL, the return value is
 * an error code and the text is copied (NUL-terminated, truncated) into error_text. */
int korovod_init(korovod_runtime** out, const void* mpi_comm, const int* set_ranks,
                 const int* set_sizes, int num_sets, char* error_text, int error_len);
int korovod_shutdown(korovod_runtime* rt); /* stops the engine; rt stays valid for queries */
void korovod_destroy(korovod_runtime* rt); /* shuts down if needed and frees rt */
int korovod_is_initialized(const korovod_runtime* rt);
const char* korovod_last_error(const korovod_runtime* rt);

int korovod_rank(const korovod_runtime* rt);
int korovod_size(const korovod_runtime* rt);
int korovod_local_rank(const korovod_runtime* rt);
int korovod_local_size(const korovod_runtime* rt);
int korovod_cross_rank(const korovod_runtime* rt);
int korovod_cross_size(const korovod_runtime* rt);
int korovod_is_homogeneous(const korovod_runtime* rt);
int korovod_mpi_built(void);
int korovod_mpi_enabled(const korovod_runtime* rt);
int korovod_mpi_threads_supported(void);
int korovod_nccl_built(void);
int korovod_gloo_built(void);
int korovod_cuda_built(void);

/* Operations: name may be NULL (-> "<op>.noname.<handle>"). Returns a handle > 0 or < 0. */
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
/* Grouped allreduce: writes n handles to handles_out; returns 0 or an error code. */
int korovod_grouped_allreduce(korovod_runtime* rt, const char* const* names, const korovod_tensor* inputs,
                              const korovod_tensor* outputs, int n, int op, double prescale,
                              double postscale, int process_set, int64_t* handles_out);

/* Handles: poll returns 1 done, 0 pending, <0 error; wait returns 0 or the op's error code. */
int korovod_poll(korovod_runtime* rt, int64_t handle);
int korovod_wait(korovod_runtime* rt, int64_t handle);
const char* korovod_handle_error(korovod_runtime* rt, int64_t handle); /* valid until release */
/* Output of allgather/alltoall/reducescatter (runtime-owned until release): data, ndim, and up to
 * max_dims dims into shape. */
int korovod_handle_output(korovod_runtime* rt, int64_t handle, void** data, int* ndim, int64_t* shape,
                          int max_dims);
int korovod_handle_received_splits(korovod_runtime* rt, int64_t handle, int32_t* splits, int max_splits);
int korovod_handle_last_joined_rank(korovod_runtime* rt, int64_t handle);
void korovod_release(korovod_runtime* rt, int64_t handle);

/* Process sets: add returns the new id (>= 0) or an error code. */
int korovod_add_process_set(korovod_runtime* rt, const int* ranks, int nranks);
int korovod_remove_process_set(korovod_runtime* rt, int id);
int korovod_process_set_rank(korovod_runtime* rt, int id);
int korovod_process_set_size(korovod_runtime* rt, int id);
int korovod_process_set_included(korovod_runtime* rt, int id);

int korovod_start_timeline(korovod_runtime* rt, const char* path, int mark_cycles);
int korovod_stop_timeline(korovod_runtime* rt);

#ifdef __cplusplus
}
#endif

#endif /* KOROVOD_C_API_H_ */
