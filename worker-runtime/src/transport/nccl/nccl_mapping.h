// korovod's dtypes and reduce ops in NCCL's terms, and NCCL / CUDA errors as Status values
// (no GPU needed: rt_nccl_test checks all of this on a CPU-only machine).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <string_view>

#include "korovod/status.h"
#include "korovod/types.h"

namespace korovod::nccl {

// uint16 and bool have no NCCL type: an InvalidArgument naming the dtype.
Result<ncclDataType_t> nccl_dtype(DataType dtype);
// Sum, Min, Max, Product, Average (ncclAvg). Adasum has no NCCL op.
Result<ncclRedOp_t> nccl_reduce_op(ReduceOp op, DataType dtype);

// The scalar ncclRedOpCreatePreMulSum multiplies by, in the tensor's own type (so float16 and
// bfloat16 get their 16-bit encodings). Floating types only: integer tensors cannot be scaled.
struct PreMulScalar {
  alignas(8) unsigned char bytes[8] = {};
};
Result<PreMulScalar> premul_scalar(DataType dtype, double factor);

Status nccl_status(ncclResult_t result, std::string_view call);  // "ncclAllReduce: <string>"
Status cuda_status(cudaError_t error, std::string_view call);    // "cudaSetDevice: <string>"

// "2.23.4", from ncclGetVersion (the library loaded, not the header compiled against).
std::string nccl_version_string();

}  // namespace korovod::nccl
