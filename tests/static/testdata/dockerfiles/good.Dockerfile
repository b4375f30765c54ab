# The same kinds of instructions done right: check-dockerfiles must accept it.
ARG GOOD_IMAGE=debian:12.8
FROM ${GOOD_IMAGE} AS build
COPY data.txt /opt/data.txt
COPY ["ignored-dir/../data.txt", "/opt/again.txt"]
RUN mkdir -p /out/lib && cp -P build/lib/libkorovod.so* build/lib/libkorovod_mpi.so* /out/lib/
FROM gcr.io/distroless/static-debian12:nonroot@sha256:0000000000000000000000000000000000000000000000000000000000000000
COPY --from=build /opt/data.txt /data.txt
USER 65532:65532
