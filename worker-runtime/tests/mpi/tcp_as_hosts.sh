#!/bin/sh
# Runs one rank of an mpirun job as if every KOROVOD_TEST_RANKS_PER_HOST (default 2) consecutive
# ranks were one host: KOROVOD_HOST_ID=host-<rank / ranks per host>, then execs the command.
# This is how the hierarchical allreduce is tested on one machine.
per=${KOROVOD_TEST_RANKS_PER_HOST:-2}
KOROVOD_HOST_ID=host-$((OMPI_COMM_WORLD_RANK / per))
export KOROVOD_HOST_ID
exec "$@"
