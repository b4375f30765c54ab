# A Dockerfile with one of each mistake check-dockerfiles must catch (tests/static/test-check-dockerfiles).
ARG BASE=ubuntu
ARG GOOD_IMAGE=debian:12.8
FROM ${BASE} AS one
FROM debian:latest AS two
FROM ${GOOD_IMAGE} AS three
ARG UNDOCUMENTED=1
ARG WRONG_DEFAULT=2
COPY no/such/file /opt/
COPY ignored-dir/kept.txt /opt/
COPY data.txt /usr/local/bin/tool
ADD https://example.invalid/x.tar.gz /opt/
COPY --from=one /nothing/checked /opt/
COPY data.txt /usr/local/bin/
USER root
RUN mkdir -p /out/lib && cp -P build/lib/libkorovod.so* /out/lib/
