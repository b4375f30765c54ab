"""korovod.common.rendezvous.RendezvousServer: the job's rendezvous store hosted by the test's own
process (as a Spark or Ray driver hosts it), ranks started by the test with only
server.rank_env(rank, size) added to a clean environment. Each test starts its own job, once per
outer job, from rank 0; the other ranks skip it."""

import os
import re
from pathlib import Path
from typing import Dict, List

import pytest

import korovod
import korovod.torch as hvd
from korovod.common.rendezvous import RendezvousServer
from test_ops_tcp_jobs import _LAUNCHER_VARIABLES, run_workers

pytestmark = pytest.mark.once_per_interpreter  # the jobs here do not depend on the outer one


def clean_environment(extra: Dict[str, str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_VARIABLES + ("KOROVOD_JOB_SECRET",))}
    package_root = str(Path(korovod.__file__).resolve().parents[1])
    env.update(PYTHONPATH=os.pathsep.join([package_root] + env.get("PYTHONPATH", "").split(os.pathsep)),
               KOROVOD_START_TIMEOUT="20", KOROVOD_COLLECTIVE_TIMEOUT_SECONDS="10")
    env.update(extra)
    return env


def run_ranks(scenario: str, envs: List[Dict[str, str]], timeout: float = 90) -> List[str]:
    return run_workers(scenario, [clean_environment(e) for e in envs], timeout)


@pytest.fixture(autouse=True)
def _rank_zero_only():
    if hvd.rank() != 0:
        pytest.skip("starts its own job; runs once per outer job, on rank 0")


def test_ranks_meet_at_a_store_this_process_hosts():
    with RendezvousServer(listen_host="127.0.0.1") as server:
        assert server.port > 0
        outputs = run_ranks("sum", [server.rank_env(r, 2) for r in range(2)])
    for rank, out in enumerate(outputs):
        assert f"SUM-OK rank {rank} of 2: [3.0, 3.0, 3.0]" in out, out
    assert server.port == -1  # stopped


def test_a_rank_with_another_secret_is_refused_and_the_store_logs_its_address(capfd):
    with RendezvousServer(listen_host="127.0.0.1") as server:
        env = server.rank_env(0, 1)
        env["KOROVOD_JOB_SECRET"] = "another-job-" + "0" * 32
        env["KOROVOD_START_TIMEOUT"] = "5"
        [out] = run_ranks("init_error", [env])
        assert "INIT-ERROR" in out and "secret" in out, out
        assert server.job_secret not in out and env["KOROVOD_JOB_SECRET"] not in out, "a secret was printed"
    logged = capfd.readouterr().err
    assert re.search(r"korovod: rendezvous store on port \d+: closed the connection from 127\.0\.0\.1:\d+: its proof "
                     r"of the job secret is wrong", logged), logged


def test_ranks_that_never_arrive_fail_the_others_naming_every_one():
    with RendezvousServer(listen_host="127.0.0.1") as server:
        env = server.rank_env(0, 3)  # ranks 1 and 2 are never started
        env["KOROVOD_START_TIMEOUT"] = "3"
        [out] = run_ranks("init_error", [env])
    assert "INIT-ERROR" in out and "ranks 1, 2 did not arrive at the rendezvous store" in out, out


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="at least 16 are needed"):
        RendezvousServer(listen_host="127.0.0.1", job_secret="short").start()
    with pytest.raises(ValueError, match="needs a job secret"):
        RendezvousServer(listen_host="127.0.0.1", job_secret="").start()
    server = RendezvousServer(listen_host="127.0.0.1")
    with pytest.raises(RuntimeError, match="before start"):
        server.rank_env(0, 2)
    with server:
        with pytest.raises(ValueError, match="rank 2 is not within a world of size 2"):
            server.rank_env(2, 2)
        with pytest.raises(RuntimeError, match="already serving"):
            server.start()
        taken = RendezvousServer(listen_host="127.0.0.1", port=server.port)
        with pytest.raises(RuntimeError, match=f"cannot host the rendezvous on 127.0.0.1:{server.port}: .*in use"):
            taken.start()
    server.stop()  # a second stop does nothing
    assert server.port == -1


def test_hosting_the_rendezvous_before_importing_torch_leaves_torch_importable():
    # A driver that hosts the store first loads libkorovod first; built with NCCL, it must not
    # bind libnccl.so.2 to an NCCL older than the one torch needs (korovod.common._lib).
    import subprocess
    import sys
    code = ("from korovod.common.rendezvous import RendezvousServer\n"
            "server = RendezvousServer(listen_host='127.0.0.1')\nserver.start()\n"
            "import torch\nprint('torch', torch.__version__, torch.ones(2).sum().item())\nserver.stop()\n")
    got = subprocess.run([sys.executable, "-c", code], env=clean_environment({}), capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == 0 and "torch " in got.stdout, got.stdout + got.stderr
