# korovod CUDA worker/launcher base image, on Debian: the CUDA runtime, NCCL and (INSTALL_TORCH=true,
# the default) the CUDA build of PyTorch from their PyPI wheels, Open MPI, UCX and rdma-core
# (RoCE / InfiniBand verbs, ibverbs-utils for ibv_devinfo), sshd on port 2222, the korovod runtime
# built with its NCCL backend, korovod-bench, the launcher entrypoint, scikit-learn, the korovod
# Python package (korovod.torch) and the PyTorch examples on PATH. The GPU driver (libcuda.so.1)
# comes from the node, as with every CUDA image.
# The build context is the repository root:
#   docker build -f docker/worker-cuda.Dockerfile -t korovod-worker-cuda:dev .
# scripts/images builds it with no registry (a Debian-made base through BUILDER_IMAGE and
# BASE_IMAGE). Build args are documented in docker/README.md.

ARG BUILDER_IMAGE=debian:12.8
ARG BASE_IMAGE=debian:12.8-slim

FROM ${BUILDER_IMAGE} AS build
ARG CMAKE_BUILD_TYPE=Release
ARG BUILD_JOBS=4
ARG NCCL_VERSION=2.23.4
ARG CUDA_VERSION=12.6.77
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates ccache \
      libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libcli11-dev libfmt-dev \
      libopenmpi-dev openmpi-bin libgloo-dev python3 python3-pip \
 && rm -rf /var/lib/apt/lists/*
# NCCL and CUDA runtime headers and libraries from the PyPI wheels scripts/setup pins for the
# project's own build (cuda-nvcc and cuda-cccl only for headers that cuda_runtime_api.h and
# nccl.h include; the runtime has no .cu files and needs no nvcc). A proxy's CA comes in as the
# secret pip-cert for this step only (scripts/images passes the host's PIP_CERT).
RUN --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && python3 -m pip install --no-cache-dir --no-deps --only-binary=:all: --target /opt/nvidia-wheels \
      "nvidia-nccl-cu12==${NCCL_VERSION}" "nvidia-cuda-runtime-cu12==${CUDA_VERSION}" \
      "nvidia-cuda-nvcc-cu12==${CUDA_VERSION}" "nvidia-cuda-cccl-cu12==${CUDA_VERSION}"
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY operator/ operator/
COPY worker-runtime/ worker-runtime/
COPY examples/ examples/
COPY docker/build-korovod.sh /usr/local/bin/build-korovod.sh
RUN --mount=type=cache,target=/root/.cache/ccache,id=korovod-ccache \
    CCACHE_DIR=/root/.cache/ccache build-korovod.sh /out -DKOROVOD_WITH_NCCL=ON \
      -DKOROVOD_NVIDIA_ROOT=/opt/nvidia-wheels/nvidia \
 && ldd /out/lib/libkorovod.so | grep 'libnccl\.so\.2' >/dev/null

FROM ${BASE_IMAGE}
ARG MPIUSER_UID=1000
ARG INSTALL_TORCH=true
ARG TORCH_VERSION=2.15.0
ARG NCCL_VERSION=2.23.4
ARG CUDA_VERSION=12.6.77
ENV DEBIAN_FRONTEND=noninteractive
# rdma-core, ibverbs-providers (mlx5, ...), ibverbs-utils (ibv_devinfo, ibv_devices),
# rdmacm-utils and UCX (ucx_info) for RoCE and InfiniBand; Open MPI selects UCX through the
# network profile's OMPI_MCA_pml=ucx (docs/gpu.md).
# A runtime image: no headers, static libraries or compiler internals (docker/dpkg-runtime-image.cfg
# says what and why), and no downloaded packages left in apt's cache.
COPY docker/dpkg-runtime-image.cfg /etc/dpkg/dpkg.cfg.d/korovod-runtime-image
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      openmpi-bin libopenmpi3 libfmt9 libgloo0 openssh-server openssh-client ca-certificates procps \
      rdma-core ibverbs-providers ibverbs-utils rdmacm-utils libucx0 ucx-utils \
      python3 python3-pip \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
# Into the system Python (/usr/bin/python3, the examples' shebang): ranks started through sshd
# see no virtualenv; Debian marks that Python externally managed, hence --break-system-packages.
# The pinned CUDA runtime and NCCL wheels are what the runtime was built against; PyPI's Linux
# torch wheels are CUDA builds that bring their own CUDA libraries as nvidia-* wheels (and may
# bring a newer NCCL, which then serves both: NCCL's API is backward compatible). Every lib/
# folder of the nvidia-* wheels goes to the linker's cache, where the runtime and tools find them.
RUN --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && python3 -m pip install --no-cache-dir --break-system-packages --only-binary=:all: \
      "nvidia-nccl-cu12==${NCCL_VERSION}" "nvidia-cuda-runtime-cu12==${CUDA_VERSION}" \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      python3 -m pip install --no-cache-dir --break-system-packages --only-binary=:all: \
        "torch==${TORCH_VERSION}" numpy scikit-learn; \
    elif [ "${INSTALL_TORCH}" != "false" ]; then \
      echo "INSTALL_TORCH must be true or false, not '${INSTALL_TORCH}'" >&2; exit 1; \
    fi \
 && python3 -c 'import glob, sysconfig; print("\n".join(sorted(glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/lib"))))' \
      >/etc/ld.so.conf.d/korovod-nvidia-wheels.conf
COPY docker/ssh/ssh_config /etc/ssh/ssh_config
COPY docker/ssh/sshd_config /etc/ssh/sshd_config
RUN mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid "${MPIUSER_UID}" --shell /bin/bash mpiuser
COPY --chown=${MPIUSER_UID}:${MPIUSER_UID} docker/ssh/user_sshd_config /home/mpiuser/.sshd_config
COPY docker/launcher-entrypoint.sh /usr/local/bin/launcher-entrypoint.sh
COPY --from=build /out/bin/korovod-bench /usr/local/bin/korovod-bench
COPY --from=build /out/lib/ /usr/local/lib/
COPY --from=build --chown=${MPIUSER_UID}:${MPIUSER_UID} /out/bin/pi /home/mpiuser/pi
COPY --from=build /out/python/korovod /usr/lib/python3/dist-packages/korovod
# korovodrun on sshd's default PATH: the package's own binary (its RPATH finds korovod/lib).
# korovod-agent too: the worker command of MPIJobs without sshd (korovod.io/launch: agent) and
# the launcher's rsh in them (docs/agent.md).
RUN ln -s /usr/lib/python3/dist-packages/korovod/bin/korovodrun /usr/local/bin/korovodrun \
 && ln -s /usr/lib/python3/dist-packages/korovod/bin/korovod-agent /usr/local/bin/korovod-agent
COPY examples/pytorch/pytorch_digits.py examples/pytorch/pytorch_synthetic_benchmark.py \
     examples/pytorch/pytorch_elastic_digits.py /usr/local/bin/
# No GPU (and so no libcuda.so.1 from the driver) exists at build time: everything else the
# tools and the runtime link must resolve.
RUN ldconfig \
 && ldconfig -p | grep 'libnccl\.so\.2' >/dev/null && ldconfig -p | grep 'libcudart\.so\.12' >/dev/null \
 && for f in /usr/local/bin/korovod-bench /usr/local/lib/libkorovod.so \
      /usr/lib/python3/dist-packages/korovod/lib/libkorovod.so; do \
      if ldd "$f" | grep -v 'libcuda\.so' | grep 'not found'; then \
        echo "$f: a library it needs is missing" >&2; exit 1; fi; \
    done \
 && /usr/sbin/sshd -t -f /etc/ssh/sshd_config \
 && korovodrun --help >/dev/null \
 && korovod-agent serve --help >/dev/null && korovod-agent rsh --help >/dev/null \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      /usr/bin/python3 -c 'import korovod.torch' \
      && pytorch_digits.py --help >/dev/null && pytorch_synthetic_benchmark.py --help >/dev/null \
      && pytorch_elastic_digits.py --help >/dev/null; \
    fi
# The examples' launchers run mpirun as root (no runAsUser), as mpi-operator's do; Open MPI
# refuses that unless told it is meant. A pod that runs as mpiuser is unaffected.
ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORKDIR /home/mpiuser
ENTRYPOINT ["/usr/local/bin/launcher-entrypoint.sh"]
CMD ["/usr/sbin/sshd", "-De"]
