# syntax=docker/dockerfile:1
# korovod CUDA worker/launcher base image: NVIDIA CUDA runtime with NCCL, UCX and rdma-core
# (RoCE / InfiniBand verbs, ibverbs-utils for ibv_devinfo), Open MPI, sshd on port 2222, the
# korovod runtime built with its NCCL backend, korovod-bench, the launcher entrypoint, and
# (INSTALL_TORCH=true, the default) PyTorch with CUDA from PyPI, scikit-learn, the korovod Python
# package (korovod.torch) and the PyTorch examples on PATH.
# The build context is the repository root:
#   docker build -f docker/worker-cuda.Dockerfile -t korovod-worker-cuda:dev .
# Build args are documented in docker/README.md.

# The devel image carries nvcc and libnccl-dev; the runtime image carries libnccl2. Both tags
# are the same CUDA release on Ubuntu 24.04 (whose fmt 9 and CMake 3.28 the build needs).
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.6.3-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04

FROM ${CUDA_DEVEL_IMAGE} AS build
ARG CMAKE_BUILD_TYPE=Release
ARG BUILD_JOBS=4
ARG CUDA_ARCHITECTURES=70;80;90
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libcli11-dev libfmt-dev \
      libopenmpi-dev openmpi-bin libucx-dev libibverbs-dev librdmacm-dev \
 && rm -rf /var/lib/apt/lists/*
# NCCL comes with the CUDA devel image; fail here, not at run time, if it does not.
RUN ldconfig -p | grep -q 'libnccl\.so\.2' && test -e /usr/include/nccl.h
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY operator/ operator/
COPY worker-runtime/ worker-runtime/
COPY examples/ examples/
# The Python package as `pip install ./worker-runtime/python` installs it (CMake component
# python), from this same build; see worker-cpu.Dockerfile.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} \
      -DKOROVOD_BUILD_TESTS=OFF -DKOROVOD_WITH_PYTHON=ON -DKOROVOD_WITH_NCCL=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
 && cmake --build build --target korovod_runtime korovod-bench pi korovod_python_wheel \
      -j ${BUILD_JOBS} \
 && mkdir -p /out/bin /out/lib /out/python/bin \
 && cp -P build/lib/libkorovod.so* build/lib/libkorovod_mpi.so* /out/lib/ \
 && cp build/bin/korovod-bench build/bin/pi /out/bin/ \
 && ldd /out/lib/libkorovod.so | grep -q 'libnccl\.so\.2' \
 && cmake --install build --component python --prefix /out/python \
 && test -f /out/python/korovod/torch/__init__.py && test -f /out/python/korovod/lib/libkorovod.so \
 && test -f /out/python/korovod/lib/libkorovod_mpi.so

FROM ${CUDA_RUNTIME_IMAGE}
ARG MPIUSER_UID=1000
ARG INSTALL_TORCH=true
ARG TORCH_VERSION=2.15.0
ENV DEBIAN_FRONTEND=noninteractive
# rdma-core, ibverbs-providers (mlx5, ...), ibverbs-utils (ibv_devinfo, ibv_devices),
# rdmacm-utils and UCX (ucx_info) for RoCE and InfiniBand; Open MPI selects UCX through the
# network profile's OMPI_MCA_pml=ucx (docs/gpu.md).
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      openmpi-bin libfmt9 openssh-server openssh-client ca-certificates procps \
      rdma-core ibverbs-providers ibverbs-utils rdmacm-utils libucx0 ucx-utils \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      apt-get install -y -q --no-install-recommends python3 python3-pip; \
    elif [ "${INSTALL_TORCH}" != "false" ]; then \
      echo "INSTALL_TORCH must be true or false, not '${INSTALL_TORCH}'" >&2; exit 1; \
    fi \
 && rm -rf /var/lib/apt/lists/*
# PyPI's Linux torch wheels are CUDA builds that bring their CUDA libraries as nvidia-* wheels
# (the driver comes from the node). Into the system Python (/usr/bin/python3, the examples'
# shebang): ranks started through sshd see no virtualenv. Ubuntu marks that Python as
# externally managed, hence --break-system-packages.
RUN if [ "${INSTALL_TORCH}" = "true" ]; then \
      python3 -m pip install --no-cache-dir --break-system-packages \
        "torch==${TORCH_VERSION}" numpy scikit-learn; \
    fi
COPY docker/ssh/ssh_config /etc/ssh/ssh_config
COPY docker/ssh/sshd_config /etc/ssh/sshd_config
# Ubuntu images ship a user "ubuntu" with uid 1000; mpiuser takes that uid, as in the CPU image.
RUN mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && if id -u ubuntu >/dev/null 2>&1; then userdel --remove ubuntu; fi \
 && useradd --create-home --uid "${MPIUSER_UID}" --shell /bin/bash mpiuser
COPY --chown=${MPIUSER_UID}:${MPIUSER_UID} docker/ssh/user_sshd_config /home/mpiuser/.sshd_config
COPY docker/launcher-entrypoint.sh /usr/local/bin/launcher-entrypoint.sh
COPY --from=build /out/bin/korovod-bench /usr/local/bin/korovod-bench
COPY --from=build /out/lib/ /usr/local/lib/
COPY --from=build --chown=${MPIUSER_UID}:${MPIUSER_UID} /out/bin/pi /home/mpiuser/pi
COPY --from=build /out/python/korovod /usr/lib/python3/dist-packages/korovod
COPY --from=build /out/python/bin/ /usr/local/bin/
COPY examples/pytorch/pytorch_digits.py examples/pytorch/pytorch_synthetic_benchmark.py /usr/local/bin/
# No GPU (and so no libcuda.so.1 from the driver) exists at build time: check that everything
# else the tools link resolves.
RUN ldconfig \
 && ldconfig -p | grep -q 'libnccl\.so\.2' \
 && /usr/sbin/sshd -t -f /etc/ssh/sshd_config \
 && ! ldd /usr/local/bin/korovod-bench | grep -v 'libcuda\.so' | grep 'not found' \
 && if [ -e /usr/local/bin/korovodrun ]; then korovodrun --help >/dev/null; fi \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      /usr/bin/python3 -c 'import korovod.torch' \
      && pytorch_digits.py --help >/dev/null && pytorch_synthetic_benchmark.py --help >/dev/null; \
    fi
WORKDIR /home/mpiuser
ENTRYPOINT ["/usr/local/bin/launcher-entrypoint.sh"]
CMD ["/usr/sbin/sshd", "-De"]
