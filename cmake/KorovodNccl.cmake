# Finds NCCL and the CUDA runtime for the NCCL backend and decides KOROVOD_HAVE_NCCL from
# KOROVOD_WITH_NCCL (AUTO: when both are found; ON: required; OFF: never).
#
# Looked for, in order: KOROVOD_NVIDIA_ROOT (the `nvidia/` folder of the PyPI wheels
# nvidia-nccl-cu12, nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12 and nvidia-cuda-cccl-cu12
# that scripts/setup installs: nccl/{include,lib}, cuda_runtime/{include,lib},
# cuda_nvcc/include/crt, cuda_cccl/include/nv), NCCL_ROOT / CUDAToolkit_ROOT, /usr/local/cuda, the system paths
# (the CUDA images' libnccl-dev). The wheels ship only versioned libraries (libnccl.so.2,
# libcudart.so.12), so the imported targets point at whichever file exists.
#
# Defines: KOROVOD_HAVE_NCCL (ON/OFF), korovod::nccl and korovod::cudart (IMPORTED), and
# KOROVOD_NCCL_DESCRIPTION for the configure summary.

set(KOROVOD_NVIDIA_ROOT "" CACHE PATH "Folder with nccl/ and cuda_runtime/ (the nvidia/ folder of the PyPI wheels)")

set(KOROVOD_HAVE_NCCL OFF)
if(KOROVOD_WITH_NCCL STREQUAL "OFF")
  set(KOROVOD_NCCL_DESCRIPTION "off (KOROVOD_WITH_NCCL=OFF)")
  return()
endif()
if(NOT KOROVOD_WITH_NCCL MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "KOROVOD_WITH_NCCL must be AUTO, ON or OFF, not '${KOROVOD_WITH_NCCL}'")
endif()

# Results cached by an earlier configure are dropped when the root changed or a file is gone
# (scripts/setup moves to a new cache folder when the pinned versions change).
set(_kv_found_vars KOROVOD_NCCL_INCLUDE_DIR KOROVOD_NCCL_LIBRARY KOROVOD_CUDART_INCLUDE_DIR KOROVOD_CUDART_LIBRARY
                   KOROVOD_CUDA_CRT_INCLUDE_DIR KOROVOD_CUDA_CCCL_INCLUDE_DIR)
foreach(_kv_var IN LISTS _kv_found_vars)
  if(NOT "${KOROVOD_NVIDIA_ROOT}" STREQUAL "${_KOROVOD_NVIDIA_ROOT_USED}" OR (${_kv_var} AND NOT EXISTS "${${_kv_var}}"))
    unset(${_kv_var} CACHE)
  endif()
endforeach()
set(_KOROVOD_NVIDIA_ROOT_USED "${KOROVOD_NVIDIA_ROOT}" CACHE INTERNAL "KOROVOD_NVIDIA_ROOT of the last search")

set(_kv_nccl_hints)
set(_kv_cuda_hints)
if(KOROVOD_NVIDIA_ROOT)
  list(APPEND _kv_nccl_hints ${KOROVOD_NVIDIA_ROOT}/nccl)
  list(APPEND _kv_cuda_hints ${KOROVOD_NVIDIA_ROOT}/cuda_runtime ${KOROVOD_NVIDIA_ROOT}/cuda_nvcc
       ${KOROVOD_NVIDIA_ROOT}/cuda_cccl)
endif()
foreach(_kv_root IN ITEMS "$ENV{NCCL_ROOT}" "${NCCL_ROOT}")
  if(_kv_root)
    list(APPEND _kv_nccl_hints ${_kv_root})
  endif()
endforeach()
foreach(_kv_root IN ITEMS "$ENV{CUDAToolkit_ROOT}" "${CUDAToolkit_ROOT}" /usr/local/cuda)
  if(_kv_root)
    list(APPEND _kv_cuda_hints ${_kv_root})
  endif()
endforeach()

find_path(KOROVOD_NCCL_INCLUDE_DIR nccl.h HINTS ${_kv_nccl_hints} PATH_SUFFIXES include)
find_library(KOROVOD_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_kv_nccl_hints} PATH_SUFFIXES lib lib64)
find_path(KOROVOD_CUDART_INCLUDE_DIR cuda_runtime_api.h HINTS ${_kv_cuda_hints} PATH_SUFFIXES include)
find_library(KOROVOD_CUDART_LIBRARY NAMES cudart libcudart.so.12 HINTS ${_kv_cuda_hints} PATH_SUFFIXES lib lib64)
# cuda_runtime_api.h includes crt/host_defines.h: next to it in a CUDA toolkit, in the nvcc wheel.
find_path(KOROVOD_CUDA_CRT_INCLUDE_DIR crt/host_defines.h HINTS ${_kv_cuda_hints} PATH_SUFFIXES include)
# nccl.h includes cuda_fp16.h, which includes <nv/target>: CCCL (in the toolkit, or its wheel).
find_path(KOROVOD_CUDA_CCCL_INCLUDE_DIR nv/target HINTS ${_kv_cuda_hints} PATH_SUFFIXES include)

set(_kv_missing)
foreach(_kv_var IN LISTS _kv_found_vars)
  if(NOT ${_kv_var})
    list(APPEND _kv_missing ${_kv_var})
  endif()
endforeach()
if(_kv_missing)
  if(KOROVOD_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "KOROVOD_WITH_NCCL=ON but not found: ${_kv_missing}. Run scripts/setup "
                        "(installs the NCCL and CUDA runtime wheels) or pass -DKOROVOD_NVIDIA_ROOT=...")
  endif()
  set(KOROVOD_NCCL_DESCRIPTION "not built (AUTO: not found: ${_kv_missing})")
  return()
endif()

file(STRINGS ${KOROVOD_NCCL_INCLUDE_DIR}/nccl.h _kv_nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
set(_kv_nccl_version "")
foreach(_kv_line IN LISTS _kv_nccl_version_lines)
  string(REGEX REPLACE "^#define NCCL_[A-Z]+ +([0-9]+).*" "\\1" _kv_part "${_kv_line}")
  string(APPEND _kv_nccl_version ".${_kv_part}")
endforeach()
string(SUBSTRING "${_kv_nccl_version}" 1 -1 _kv_nccl_version)

foreach(_kv_lib nccl cudart)
  string(TOUPPER ${_kv_lib} _kv_upper)
  if(NOT TARGET korovod::${_kv_lib})
    add_library(korovod::${_kv_lib} SHARED IMPORTED)
    set_target_properties(korovod::${_kv_lib} PROPERTIES
      IMPORTED_LOCATION ${KOROVOD_${_kv_upper}_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${KOROVOD_${_kv_upper}_INCLUDE_DIR}
      INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${KOROVOD_${_kv_upper}_INCLUDE_DIR})
  endif()
endforeach()
foreach(_kv_dir ${KOROVOD_CUDA_CRT_INCLUDE_DIR} ${KOROVOD_CUDA_CCCL_INCLUDE_DIR})
  set_property(TARGET korovod::cudart APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${_kv_dir})
  set_property(TARGET korovod::cudart APPEND PROPERTY INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${_kv_dir})
endforeach()
set(KOROVOD_HAVE_NCCL ON)
set(KOROVOD_NCCL_DESCRIPTION "NCCL ${_kv_nccl_version} (${KOROVOD_NCCL_LIBRARY}), CUDA runtime ${KOROVOD_CUDART_LIBRARY}")
