#!/bin/sh
# The build stage of every korovod image: configures and builds the operator, the runtime, its
# tools and the Python package from the repository copied to the current directory, and lays out
# what the images copy under OUT. The operator and CPU worker Dockerfiles run it with the same
# inputs, so the build cache (content-addressed) serves both from one compile.
#   build-korovod.sh OUT [CMAKE_ARGS...]      (env: CMAKE_BUILD_TYPE, BUILD_JOBS)
set -eu
case ${1:-} in
  ""|-h|--help)
    echo "usage: build-korovod.sh OUT [CMAKE_ARGS...]  (env: CMAKE_BUILD_TYPE, BUILD_JOBS)"
    [ -n "${1:-}" ]; exit ;;
esac
out=$1
shift
launcher=
command -v ccache >/dev/null && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
# KOROVOD_WERROR stays off (its default): warnings must not break a user's image build.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" $launcher \
  -DKOROVOD_BUILD_TESTS=OFF -DKOROVOD_BUILD_EXAMPLES=ON -DKOROVOD_BUILD_BENCH=ON \
  -DKOROVOD_WITH_PYTHON=ON "$@"
cmake --build build -j "${BUILD_JOBS:-4}" \
  --target korovod-operator korovod_runtime korovod-bench pi korovod_python_wheel
build/bin/korovod-operator --version
mkdir -p "$out/bin" "$out/lib" "$out/operator-lib" "$out/python"
cp build/bin/korovod-operator build/bin/korovod-bench build/bin/pi "$out/bin/"
cp -P build/lib/libkorovod.so* build/lib/libkorovod_mpi.so* "$out/lib/"
# The Python package as `pip install ./worker-runtime/python` installs it (the CMake component
# python: korovod/**.py, korovod/lib/libkorovod*.so with RPATH $ORIGIN, korovodrun).
cmake --install build --component python --prefix "$out/python"
test -f "$out/python/korovod/torch/__init__.py"
test -f "$out/python/korovod/lib/libkorovod.so"
test -f "$out/python/korovod/lib/libkorovod_mpi.so"
# The operator's base (distroless-like) has glibc, libstdc++ and libgcc_s; every other shared
# library it links (cpprestsdk, Boost, yaml-cpp, OpenSSL, fmt, ...) comes from this Debian.
ldd build/bin/korovod-operator \
  | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
  | grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' \
  | xargs -r cp -L -t "$out/operator-lib/"
ls -l "$out/bin" "$out/lib" "$out/operator-lib"
