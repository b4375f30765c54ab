#!/bin/sh
# A rank is SIGKILLed in the middle of TCP allreduces (mpirun --enable-recovery, so the job
# outlives it, as under a launcher that does not kill the others). Every survivor must print
# TCP-CRASH-OK: its allreduce failed within the bound, not a hang, and the error names the
# killed rank.
set -u
mpirun=$1
exe=$2
np=${3:-3}
out=$(timeout 60 "$mpirun" -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp \
      --mca btl_tcp_if_include lo --enable-recovery "$exe" --crash 2>&1)
echo "$out"
ok=$(echo "$out" | grep -c "TCP-CRASH-OK")
if [ "$ok" -ne $((np - 1)) ]; then
  echo "$ok of $((np - 1)) survivors reported an error naming the killed rank within the bound"; exit 1
fi
echo "tcp crash check passed (np=$np): every survivor failed in time, naming the killed rank"
