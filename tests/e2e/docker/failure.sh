#!/usr/bin/env bash
# A job that fails, as containers: its ranks exit 3 over real ssh, mpirun fails, the launcher
# Job runs out of retries (backoffLimit 0: BackoffLimitExceeded), so the MPIJob is Failed,
# korovod run exits 1, and no container or network of the run is left.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0
start_korovod "$KOROVOD_SOURCE_DIR/tests/e2e/docker/manifests/failing.yaml"
wait_korovod 300
[[ $CODE == 1 ]] || fail "korovod run exited $CODE, not 1 (Failed)"
expect_in "$OUT" '\] rank failing$' "the ranks ran in the worker containers"
expect_in "$OUT" 'MPIJob default/failing: Failed' "summary"
expect_nothing_left "$(run_id)"
echo "PASS: the failed job's containers and network are gone"
