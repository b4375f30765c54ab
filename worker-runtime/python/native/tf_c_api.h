// The part of TensorFlow's stable C API (tensorflow/c/{tf_status,tf_tensor,ops,kernels}.h) that
// korovod's TensorFlow ops use, looked up at load time in the libtensorflow_framework.so.2 that
// TensorFlow has loaded. Nothing is compiled against TensorFlow's headers or linked against its
// libraries, so one build serves every TensorFlow that exports these functions (2.16 to today).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" {
typedef struct TF_Status TF_Status;
typedef struct TF_Tensor TF_Tensor;
typedef struct TF_OpDefinitionBuilder TF_OpDefinitionBuilder;
typedef struct TF_ShapeInferenceContext TF_ShapeInferenceContext;
typedef struct TF_ShapeHandle TF_ShapeHandle;
typedef struct TF_KernelBuilder TF_KernelBuilder;
typedef struct TF_OpKernelConstruction TF_OpKernelConstruction;
typedef struct TF_OpKernelContext TF_OpKernelContext;
typedef struct TF_AsyncOpKernelDoneCallback TF_AsyncOpKernelDoneCallback;
}

namespace korovod::tf {

// TF_DataType values (tensorflow/c/tf_datatype.h; part of the GraphDef format, never renumbered).
enum DataType : int {
  kFloat = 1, kDouble = 2, kInt32 = 3, kUint8 = 4, kInt16 = 5, kInt8 = 6, kInt64 = 9, kBool = 10,
  kBfloat16 = 14, kUint16 = 17, kHalf = 19,
};

// TF_Code values (the canonical error codes TensorFlow shares with gRPC).
enum Code : int {
  kOk = 0, kUnknown = 2, kInvalidArgument = 3, kFailedPrecondition = 9, kAborted = 10, kInternal = 13,
};

using ShapeFn = void (*)(TF_ShapeInferenceContext*, TF_Status*);
using CreateFn = void* (*)(TF_OpKernelConstruction*);
using ComputeAsyncFn = void (*)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback*);
using DeleteFn = void (*)(void*);

// One pointer per function, filled by load(); the names are TensorFlow's.
struct Api {
  TF_Status* (*TF_NewStatus)();
  void (*TF_DeleteStatus)(TF_Status*);
  void (*TF_SetStatus)(TF_Status*, int code, const char* msg);
  int (*TF_GetCode)(const TF_Status*);
  const char* (*TF_Message)(const TF_Status*);

  void (*TF_DeleteTensor)(TF_Tensor*);
  int (*TF_TensorType)(const TF_Tensor*);
  int (*TF_NumDims)(const TF_Tensor*);
  int64_t (*TF_Dim)(const TF_Tensor*, int);
  size_t (*TF_TensorByteSize)(const TF_Tensor*);
  void* (*TF_TensorData)(const TF_Tensor*);

  TF_OpDefinitionBuilder* (*TF_NewOpDefinitionBuilder)(const char*);
  void (*TF_RegisterOpDefinition)(TF_OpDefinitionBuilder*, TF_Status*);
  void (*TF_OpDefinitionBuilderAddAttr)(TF_OpDefinitionBuilder*, const char*);
  void (*TF_OpDefinitionBuilderAddInput)(TF_OpDefinitionBuilder*, const char*);
  void (*TF_OpDefinitionBuilderAddOutput)(TF_OpDefinitionBuilder*, const char*);
  void (*TF_OpDefinitionBuilderSetIsStateful)(TF_OpDefinitionBuilder*, bool);
  void (*TF_OpDefinitionBuilderSetShapeInferenceFunction)(TF_OpDefinitionBuilder*, ShapeFn);
  TF_ShapeHandle* (*TF_NewShapeHandle)();
  void (*TF_DeleteShapeHandle)(TF_ShapeHandle*);
  void (*TF_ShapeInferenceContextGetInput)(TF_ShapeInferenceContext*, int, TF_ShapeHandle*, TF_Status*);
  void (*TF_ShapeInferenceContextSetOutput)(TF_ShapeInferenceContext*, int, TF_ShapeHandle*, TF_Status*);
  void (*TF_ShapeInferenceContextSetUnknownShape)(TF_ShapeInferenceContext*, TF_Status*);

  TF_KernelBuilder* (*TF_NewAsyncKernelBuilder)(const char*, const char*, CreateFn, ComputeAsyncFn, DeleteFn);
  void (*TF_RegisterKernelBuilder)(const char*, TF_KernelBuilder*, TF_Status*);
  void (*TF_GetInput)(TF_OpKernelContext*, int, TF_Tensor**, TF_Status*);
  TF_Tensor* (*TF_AllocateOutput)(TF_OpKernelContext*, int, int dtype, const int64_t*, int, size_t, TF_Status*);
  void (*TF_OpKernelContext_Failure)(TF_OpKernelContext*, TF_Status*);
  void (*TF_OpKernelConstruction_Failure)(TF_OpKernelConstruction*, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrSize)(TF_OpKernelConstruction*, const char*, int32_t*, int32_t*, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrString)(TF_OpKernelConstruction*, const char*, char*, size_t, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrInt64)(TF_OpKernelConstruction*, const char*, int64_t*, TF_Status*);
  void (*TF_RunAsyncOpKernelDoneCallback)(TF_AsyncOpKernelDoneCallback*);
};

// Fills `api` from the loaded libtensorflow_framework.so.2. Returns "" or why it cannot (TensorFlow
// not loaded in this process, or a function missing: a TensorFlow too old for async C kernels).
std::string load(Api& api);

}  // namespace korovod::tf
