# Included by the top-level CMakeLists.txt when KOROVOD_FUZZ=ON (a build dir of its own, made by
# scripts/fuzz): every library of this build gets libFuzzer's coverage instrumentation and
# ASan + UBSan, so the fuzz targets see and check the parsers' own code. Needs clang.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KOROVOD_FUZZ=ON needs clang (-DCMAKE_CXX_COMPILER=clang++ "
                      "-DCMAKE_C_COMPILER=clang); scripts/fuzz configures it")
endif()
if(KOROVOD_BUILD_TESTS OR KOROVOD_SANITIZE OR KOROVOD_SANITIZE_THREAD)
  message(FATAL_ERROR "KOROVOD_FUZZ=ON builds only the fuzz targets: configure it with "
                      "-DKOROVOD_BUILD_TESTS=OFF and no KOROVOD_SANITIZE* (scripts/fuzz does)")
endif()
# UB stops the run (a crash libFuzzer saves) instead of printing and going on.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
# -Werror is the g++ build's gate (the project is kept warning-free there); clang 14 warns about
# other things, which must not stop fuzzing.
set_property(TARGET korovod_warnings PROPERTY INTERFACE_COMPILE_OPTIONS -Wall -Wextra)
