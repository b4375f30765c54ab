#!/bin/sh
# A rank stops (SIGSTOP: alive, silent) mid-job, under mpirun --enable-recovery so that the job
# outlives it. Every other rank must print STOPPED-RANK-OK: its next allreduce failed within
# KOROVOD_COLLECTIVE_TIMEOUT_SECONDS (3 s in the test) + 1 s with an error naming the stopped
# rank ("lost rank 2 on host h"). With KOROVOD_CPU_OPERATIONS=mpi every wait is in MPI, which
# cannot be interrupted: the name comes from the watchdogs' probes (MpiControl::silent_peers).
# usage: stopped_rank_test.sh MPIRUN RT_MPI_TEST
set -u
mpirun=$1
exe=$2
np=3
# KOROVOD_HOSTNAME names this machine in the errors (as every rank is on it): "on host stop-host".
out=$(KOROVOD_HOSTNAME=stop-host timeout 60 "$mpirun" -np $np --oversubscribe --bind-to none --mca btl self,vader,tcp \
  --mca btl_tcp_if_include lo --enable-recovery "$exe" --stopped-rank 2>&1)
echo "$out"
ok=$(echo "$out" | grep -c "STOPPED-RANK-OK")
if [ "$ok" -ne $((np - 1)) ]; then
  echo "stopped-rank check: $ok of $((np - 1)) survivors named the stopped rank in time"; exit 1
fi
echo "stopped-rank check passed"
