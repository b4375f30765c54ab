#!/bin/sh
# A rank is SIGKILLed mid-job. Two bounds are checked:
#  1. plain mpirun: Open MPI notices the dead process and terminates the job; the run must end
#     (non-zero) within 30 s, not hang;
#  2. mpirun --enable-recovery (the job survives the loss, as under a launcher that does not kill
#     the others): every surviving rank must print DEAD-RANK-OK, i.e. its pending allreduce failed
#     with an error within KOROVOD_COLLECTIVE_TIMEOUT_SECONDS (3 s in the test) + 2 s.
set -u
mpirun=$1
exe=$2
np=3
common="-np $np --oversubscribe --bind-to none --mca btl self,vader,tcp --mca btl_tcp_if_include lo"

start=$(date +%s)
timeout 60 "$mpirun" $common "$exe" --dead-rank >/tmp/korovod_dead_rank_plain.$$ 2>&1
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $took -gt 30 ]; then
  echo "plain mpirun: rc=$rc after ${took}s (want non-zero within 30 s)"; cat /tmp/korovod_dead_rank_plain.$$; exit 1
fi
echo "plain mpirun ended the job (rc=$rc) ${took}s after start"

out=$(timeout 60 "$mpirun" $common --enable-recovery "$exe" --dead-rank 2>&1)
echo "$out"
ok=$(echo "$out" | grep -c "DEAD-RANK-OK")
if [ "$ok" -ne $((np - 1)) ]; then
  echo "with --enable-recovery: $ok of $((np - 1)) survivors reported the error in time"; exit 1
fi
echo "dead-rank check passed"
