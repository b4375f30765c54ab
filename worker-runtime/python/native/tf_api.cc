#include <dlfcn.h>

#include "tf_c_api.h"

namespace korovod::tf {
namespace {

template <typename Fn>
bool resolve(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return fn != nullptr;
}

}  // namespace

std::string load(Api& api) {
  // RTLD_NOLOAD: only the copy TensorFlow itself loaded (with `import tensorflow`).
  void* lib = dlopen("libtensorflow_framework.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return "libtensorflow_framework.so.2 is not loaded in this process (import tensorflow first)";
  std::string missing;
#define KOROVOD_TF_RESOLVE(name) resolve(lib, #name, api.name, missing)
  KOROVOD_TF_RESOLVE(TF_NewStatus);
  KOROVOD_TF_RESOLVE(TF_DeleteStatus);
  KOROVOD_TF_RESOLVE(TF_SetStatus);
  KOROVOD_TF_RESOLVE(TF_GetCode);
  KOROVOD_TF_RESOLVE(TF_Message);
  KOROVOD_TF_RESOLVE(TF_DeleteTensor);
  KOROVOD_TF_RESOLVE(TF_TensorType);
  KOROVOD_TF_RESOLVE(TF_NumDims);
  KOROVOD_TF_RESOLVE(TF_Dim);
  KOROVOD_TF_RESOLVE(TF_TensorByteSize);
  KOROVOD_TF_RESOLVE(TF_TensorData);
  KOROVOD_TF_RESOLVE(TF_NewOpDefinitionBuilder);
  KOROVOD_TF_RESOLVE(TF_RegisterOpDefinition);
  KOROVOD_TF_RESOLVE(TF_OpDefinitionBuilderAddAttr);
  KOROVOD_TF_RESOLVE(TF_OpDefinitionBuilderAddInput);
  KOROVOD_TF_RESOLVE(TF_OpDefinitionBuilderAddOutput);
  KOROVOD_TF_RESOLVE(TF_OpDefinitionBuilderSetIsStateful);
  KOROVOD_TF_RESOLVE(TF_OpDefinitionBuilderSetShapeInferenceFunction);
  KOROVOD_TF_RESOLVE(TF_NewShapeHandle);
  KOROVOD_TF_RESOLVE(TF_DeleteShapeHandle);
  KOROVOD_TF_RESOLVE(TF_ShapeInferenceContextGetInput);
  KOROVOD_TF_RESOLVE(TF_ShapeInferenceContextSetOutput);
  KOROVOD_TF_RESOLVE(TF_ShapeInferenceContextSetUnknownShape);
  KOROVOD_TF_RESOLVE(TF_NewAsyncKernelBuilder);
  KOROVOD_TF_RESOLVE(TF_RegisterKernelBuilder);
  KOROVOD_TF_RESOLVE(TF_GetInput);
  KOROVOD_TF_RESOLVE(TF_AllocateOutput);
  KOROVOD_TF_RESOLVE(TF_OpKernelContext_Failure);
  KOROVOD_TF_RESOLVE(TF_OpKernelConstruction_Failure);
  KOROVOD_TF_RESOLVE(TF_OpKernelConstruction_GetAttrSize);
  KOROVOD_TF_RESOLVE(TF_OpKernelConstruction_GetAttrString);
  KOROVOD_TF_RESOLVE(TF_OpKernelConstruction_GetAttrInt64);
  KOROVOD_TF_RESOLVE(TF_RunAsyncOpKernelDoneCallback);
#undef KOROVOD_TF_RESOLVE
  // The handle stays open: the library must outlive every op registered with it.
  if (!missing.empty()) return "libtensorflow_framework.so.2 lacks " + missing;
  return "";
}

}  // namespace korovod::tf
