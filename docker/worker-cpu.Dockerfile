# syntax=docker/dockerfile:1
# korovod CPU worker/launcher base image: Open MPI, sshd on port 2222 (root and non-root), the
# korovod runtime (libkorovod.so) and tools (korovod-bench, the pi example), the launcher
# entrypoint that waits for worker DNS, and (INSTALL_TORCH=true, the default) Python with
# Debian's CPU build of PyTorch and scikit-learn, the korovod Python package (korovod.torch) and
# the PyTorch examples on PATH (examples/pytorch/*.yaml name them so). INSTALL_TENSORFLOW=true
# (tagged korovod-worker-cpu:<version>-tensorflow, docs/images.md) adds a venv with PyPI's
# tensorflow-cpu (and its Keras 3) that sees the same korovod package: korovod.tensorflow,
# korovod.keras and the TensorFlow examples, run through /usr/local/bin/korovod-tf-python.
# The build context is the repository root:
#   docker build -f docker/worker-cpu.Dockerfile -t korovod-worker-cpu:dev .
# Build args are documented in docker/README.md.

ARG BUILDER_IMAGE=debian:12.8
ARG BASE_IMAGE=debian:12.8-slim

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
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY operator/ operator/
COPY worker-runtime/ worker-runtime/
COPY examples/ examples/
# The Python package is what `pip install ./worker-runtime/python` installs (CMake component
# python: korovod/**.py, korovod/lib/libkorovod*.so with RPATH $ORIGIN, korovodrun), taken from
# this same build instead of building the runtime a second time.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} \
      -DKOROVOD_BUILD_TESTS=OFF -DKOROVOD_WITH_PYTHON=ON -DKOROVOD_WITH_NCCL=OFF \
 && cmake --build build --target korovod_runtime korovod-bench pi korovod_python_wheel \
      -j ${BUILD_JOBS} \
 && mkdir -p /out/bin /out/lib /out/python/bin \
 && cp -P build/lib/libkorovod.so* build/lib/libkorovod_mpi.so* /out/lib/ \
 && cp build/bin/korovod-bench build/bin/pi /out/bin/ \
 && cmake --install build --component python --prefix /out/python \
 && test -f /out/python/korovod/torch/__init__.py && test -f /out/python/korovod/lib/libkorovod.so \
 && test -f /out/python/korovod/lib/libkorovod_mpi.so

FROM ${BASE_IMAGE}
ARG INSTALL_TORCH=true
ARG INSTALL_TENSORFLOW=false
ARG TENSORFLOW_VERSION=2.21.0
ARG MPIUSER_UID=1000
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      openmpi-bin libopenmpi3 libfmt9 openssh-server openssh-client ca-certificates procps \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      apt-get install -y -q --no-install-recommends \
        python3 python3-torch python3-numpy python3-sklearn; \
    elif [ "${INSTALL_TORCH}" != "false" ]; then \
      echo "INSTALL_TORCH must be true or false, not '${INSTALL_TORCH}'" >&2; exit 1; \
    fi \
 && rm -rf /var/lib/apt/lists/*
# sshd: the same configuration files the e2e tests run a real sshd with. /run/sshd is the
# privilege-separation directory a root sshd needs.
COPY docker/ssh/ssh_config /etc/ssh/ssh_config
COPY docker/ssh/sshd_config /etc/ssh/sshd_config
RUN mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid "${MPIUSER_UID}" --shell /bin/bash mpiuser
COPY --chown=${MPIUSER_UID}:${MPIUSER_UID} docker/ssh/user_sshd_config /home/mpiuser/.sshd_config
COPY docker/launcher-entrypoint.sh /usr/local/bin/launcher-entrypoint.sh
# Ranks started through sshd get sshd's default PATH and the linker cache, not this image's ENV:
# install into /usr/local and refresh the cache.
COPY --from=build /out/bin/korovod-bench /usr/local/bin/korovod-bench
COPY --from=build /out/lib/ /usr/local/lib/
COPY --from=build --chown=${MPIUSER_UID}:${MPIUSER_UID} /out/bin/pi /home/mpiuser/pi
# korovod.torch for /usr/bin/python3 (Debian's dist-packages, on every Python 3's path there),
# korovodrun, and the PyTorch examples on sshd's default PATH, where mpirun finds them by name.
# Their shebang is /usr/bin/python3, the interpreter python3-torch belongs to.
COPY --from=build /out/python/korovod /usr/lib/python3/dist-packages/korovod
COPY --from=build /out/python/bin/ /usr/local/bin/
COPY examples/pytorch/pytorch_digits.py examples/pytorch/pytorch_synthetic_benchmark.py /usr/local/bin/
# TensorFlow (INSTALL_TENSORFLOW=true): its own venv, so PyPI's numpy never shadows the one Debian's
# torch was built against; the korovod package is linked into it. The examples' shebang runs
# korovod-tf-python, found on sshd's default PATH like the scripts.
COPY docker/korovod-tf-python /usr/local/bin/korovod-tf-python
COPY examples/tensorflow/keras_digits.py examples/tensorflow/tensorflow_digits.py \
     examples/tensorflow/tensorflow_synthetic_benchmark.py /usr/local/bin/
RUN if [ "${INSTALL_TENSORFLOW}" = "true" ]; then \
      apt-get update -q && apt-get install -y -q --no-install-recommends python3 python3-venv \
      && rm -rf /var/lib/apt/lists/* \
      && python3 -m venv /opt/korovod/venv-tf \
      && /opt/korovod/venv-tf/bin/pip install --no-cache-dir --only-binary=:all: \
           "tensorflow-cpu==${TENSORFLOW_VERSION}" scikit-learn cloudpickle \
      && ln -s /usr/lib/python3/dist-packages/korovod \
           "$(/opt/korovod/venv-tf/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/korovod" \
      && korovod-tf-python -c 'import korovod.tensorflow, korovod.keras' \
      && keras_digits.py --help >/dev/null && tensorflow_digits.py --help >/dev/null \
      && tensorflow_synthetic_benchmark.py --help >/dev/null; \
    elif [ "${INSTALL_TENSORFLOW}" != "false" ]; then \
      echo "INSTALL_TENSORFLOW must be true or false, not '${INSTALL_TENSORFLOW}'" >&2; exit 1; \
    fi
RUN ldconfig \
 && /usr/sbin/sshd -t -f /etc/ssh/sshd_config \
 && korovod-bench --help >/dev/null \
 && if [ -e /usr/local/bin/korovodrun ]; then korovodrun --help >/dev/null; fi \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      /usr/bin/python3 -c 'import korovod.torch' \
      && pytorch_digits.py --help >/dev/null && pytorch_synthetic_benchmark.py --help >/dev/null; \
    fi
WORKDIR /home/mpiuser
# Launcher: the command runs once every host in /etc/mpi/hostfile resolves. Workers default to
# sshd (the operator sets /usr/sbin/sshd -De when a worker has no command).
ENTRYPOINT ["/usr/local/bin/launcher-entrypoint.sh"]
CMD ["/usr/sbin/sshd", "-De"]
