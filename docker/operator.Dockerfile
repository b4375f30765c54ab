# korovod-operator image: the operator built from this repository (the build context is the
# repository root), on a minimal distroless runtime running as a non-root user.
#   docker build -f docker/operator.Dockerfile -t korovod-operator:dev .
# scripts/images builds it with no registry (Debian-made bases through BUILDER_IMAGE and
# RUNTIME_IMAGE). Build args are documented in docker/README.md.

ARG BUILDER_IMAGE=debian:12.8
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# The build stage is the same, line for line, in worker-cpu.Dockerfile: one compile serves both.
FROM ${BUILDER_IMAGE} AS build
ARG CMAKE_BUILD_TYPE=Release
ARG BUILD_JOBS=4
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates ccache \
      libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libcli11-dev libfmt-dev \
      libopenmpi-dev openmpi-bin libgloo-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY operator/ operator/
COPY worker-runtime/ worker-runtime/
COPY examples/ examples/
COPY docker/build-korovod.sh /usr/local/bin/build-korovod.sh
# ccache in a BuildKit cache mount: after a source change only the touched files compile.
RUN --mount=type=cache,target=/root/.cache/ccache,id=korovod-ccache \
    CCACHE_DIR=/root/.cache/ccache build-korovod.sh /out -DKOROVOD_WITH_NCCL=OFF

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/bin/korovod-operator /usr/local/bin/korovod-operator
COPY --from=build /out/operator-lib/ /usr/local/lib/korovod/
ENV LD_LIBRARY_PATH=/usr/local/lib/korovod
# 65532 is distroless's "nonroot"; the Helm chart also runs it read-only with no capabilities.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/korovod-operator"]
