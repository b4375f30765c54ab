#!/bin/sh
# A rank is SIGKILLed in the middle of shared-memory allreduces (mpirun --enable-recovery, so
# the job outlives it, as under a launcher that does not kill the others). Every survivor must
# print SHM-CRASH-OK (its allreduce failed within the bound, not a hang), and the job must leave
# nothing in /dev/shm: the segment names are unlinked as soon as all ranks have mapped them.
set -u
mpirun=$1
exe=$2
np=3
before=$(ls /dev/shm | grep '^korovod-' | sort)
out=$(timeout 60 "$mpirun" -np $np --oversubscribe --bind-to none --mca btl self,vader,tcp \
      --mca btl_tcp_if_include lo --enable-recovery "$exe" --crash 2>&1)
echo "$out"
ok=$(echo "$out" | grep -c "SHM-CRASH-OK")
if [ "$ok" -ne $((np - 1)) ]; then
  echo "$ok of $((np - 1)) survivors reported the error within the bound"; exit 1
fi
after=$(ls /dev/shm | grep '^korovod-' | sort)
leaked=$(printf '%s\n' "$after" | grep -vxF -e "$before" | grep . || true)
if [ -n "$leaked" ]; then
  echo "left in /dev/shm: $leaked"; exit 1
fi
echo "shm crash check passed: errors in time, nothing left in /dev/shm"
