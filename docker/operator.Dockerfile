# syntax=docker/dockerfile:1
# korovod-operator image: the operator built from this repository (the build context is the
# repository root), on a minimal distroless runtime running as a non-root user.
#   docker build -f docker/operator.Dockerfile -t korovod-operator:dev .
# Build args are documented in docker/README.md.

ARG BUILDER_IMAGE=debian:12.8
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILDER_IMAGE} AS build
ARG CMAKE_BUILD_TYPE=Release
ARG BUILD_JOBS=4
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libcli11-dev libfmt-dev \
      libopenmpi-dev openmpi-bin \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build reads: the top-level CMake files, the operator and the runtime (the
# top-level CMakeLists.txt configures both; examples/ and bench/ are skipped when absent).
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY operator/ operator/
COPY worker-runtime/ worker-runtime/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} \
      -DKOROVOD_BUILD_TESTS=OFF -DKOROVOD_WITH_PYTHON=OFF -DKOROVOD_WITH_NCCL=OFF \
 && cmake --build build --target korovod-operator -j ${BUILD_JOBS} \
 && build/bin/korovod-operator --version
# The runtime image has glibc, libstdc++ and libgcc_s; bring every other shared library the
# binary links (cpprestsdk, Boost, yaml-cpp, OpenSSL, fmt) from this same Debian release.
RUN mkdir -p /out/bin /out/lib \
 && cp build/bin/korovod-operator /out/bin/ \
 && ldd build/bin/korovod-operator \
    | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
    | grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' \
    | xargs -r cp -L -t /out/lib/ \
 && ls -l /out/lib

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/bin/korovod-operator /usr/local/bin/korovod-operator
COPY --from=build /out/lib/ /usr/local/lib/korovod/
ENV LD_LIBRARY_PATH=/usr/local/lib/korovod
# 65532 is distroless's "nonroot"; the Helm chart also runs it read-only with no capabilities.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/korovod-operator"]
