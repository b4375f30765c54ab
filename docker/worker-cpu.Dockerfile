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
# scripts/images builds it with no registry (a Debian-made base through BUILDER_IMAGE and
# BASE_IMAGE). Build args are documented in docker/README.md.

ARG BUILDER_IMAGE=debian:12.8
ARG BASE_IMAGE=debian:12.8-slim

# The build stage is the same, line for line, in operator.Dockerfile: one compile serves both.
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

FROM ${BASE_IMAGE}
ARG INSTALL_TORCH=true
ARG INSTALL_TENSORFLOW=false
ARG TENSORFLOW_VERSION=2.21.0
ARG MPIUSER_UID=1000
ENV DEBIAN_FRONTEND=noninteractive
# A runtime image: no headers, static libraries or compiler internals (docker/dpkg-runtime-image.cfg
# says what and why), and no downloaded packages left in apt's cache.
COPY docker/dpkg-runtime-image.cfg /etc/dpkg/dpkg.cfg.d/korovod-runtime-image
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      openmpi-bin libopenmpi3 libfmt9 libgloo0 openssh-server openssh-client ca-certificates procps \
 && if [ "${INSTALL_TORCH}" = "true" ]; then \
      apt-get install -y -q --no-install-recommends \
        python3 python3-torch python3-numpy python3-sklearn; \
    elif [ "${INSTALL_TORCH}" != "false" ]; then \
      echo "INSTALL_TORCH must be true or false, not '${INSTALL_TORCH}'" >&2; exit 1; \
    fi \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
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
# korovodrun on sshd's default PATH: the package's own binary (its RPATH finds korovod/lib).
# korovod-agent too: the worker command of MPIJobs without sshd (korovod.io/launch: agent) and
# the launcher's rsh in them (docs/agent.md).
RUN ln -s /usr/lib/python3/dist-packages/korovod/bin/korovodrun /usr/local/bin/korovodrun \
 && ln -s /usr/lib/python3/dist-packages/korovod/bin/korovod-agent /usr/local/bin/korovod-agent
COPY examples/pytorch/pytorch_digits.py examples/pytorch/pytorch_synthetic_benchmark.py \
     examples/pytorch/pytorch_elastic_digits.py /usr/local/bin/
# TensorFlow (INSTALL_TENSORFLOW=true): its own venv, so PyPI's numpy never shadows the one Debian's
# torch was built against; the korovod package is linked into it. The examples' shebang runs
# korovod-tf-python, found on sshd's default PATH like the scripts.
COPY docker/korovod-tf-python /usr/local/bin/korovod-tf-python
COPY examples/tensorflow/keras_digits.py examples/tensorflow/tensorflow_digits.py \
     examples/tensorflow/tensorflow_synthetic_benchmark.py examples/tensorflow/tensorflow_elastic_digits.py \
     /usr/local/bin/
# A build whose pip must trust an extra CA (a proxy's) gets it as the secret pip-cert (scripts/images
# passes the host's PIP_CERT); it is mounted for this step only and stays out of the image.
RUN --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && if [ "${INSTALL_TENSORFLOW}" = "true" ]; then \
      apt-get update -q && apt-get install -y -q --no-install-recommends python3 python3-venv \
      && apt-get clean && rm -rf /var/lib/apt/lists/* \
      && python3 -m venv /opt/korovod/venv-tf \
      && /opt/korovod/venv-tf/bin/pip install --no-cache-dir --only-binary=:all: \
           "tensorflow-cpu==${TENSORFLOW_VERSION}" scikit-learn cloudpickle \
      && ln -s /usr/lib/python3/dist-packages/korovod \
           "$(/opt/korovod/venv-tf/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/korovod" \
      && korovod-tf-python -c 'import korovod.tensorflow, korovod.keras' \
      && keras_digits.py --help >/dev/null && tensorflow_digits.py --help >/dev/null \
      && tensorflow_synthetic_benchmark.py --help >/dev/null && tensorflow_elastic_digits.py --help >/dev/null; \
    elif [ "${INSTALL_TENSORFLOW}" != "false" ]; then \
      echo "INSTALL_TENSORFLOW must be true or false, not '${INSTALL_TENSORFLOW}'" >&2; exit 1; \
    fi
# Every library the tools and the runtime link must resolve in this image.
RUN ldconfig \
 && for f in /usr/local/bin/korovod-bench /usr/local/lib/libkorovod.so /usr/local/lib/libkorovod_mpi.so \
      /usr/lib/python3/dist-packages/korovod/lib/libkorovod.so /home/mpiuser/pi; do \
      if ldd "$f" | grep 'not found'; then echo "$f: a library it needs is missing" >&2; exit 1; fi; \
    done \
 && /usr/sbin/sshd -t -f /etc/ssh/sshd_config \
 && korovod-bench --help >/dev/null \
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
# Launcher: the command runs once every host in /etc/mpi/hostfile resolves. Workers default to
# sshd (the operator sets /usr/sbin/sshd -De when a worker has no command).
ENTRYPOINT ["/usr/local/bin/launcher-entrypoint.sh"]
CMD ["/usr/sbin/sshd", "-De"]
