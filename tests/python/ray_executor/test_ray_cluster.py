"""korovod.ray.RayExecutor on a Ray cluster that the test starts on this machine: a head node and
a second node (``ray start --block``, one CPU each, their own ports and temp dir, stopped at the
end), the driver connected to it; ``num_hosts=2`` puts one rank on each node, as on a cluster of
two machines; an elastic job's two workers go one to each node, a killed one is replaced on its
node, and a node lost mid-training leaves the other to finish alone."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the PyPI torch venv)")
torch = pytest.importorskip("torch")

import elastic_checks  # noqa: E402
import korovod  # noqa: E402
import ray_helpers  # noqa: E402
import torch_elastic_training  # noqa: E402
import torch_engine_training  # noqa: E402
from free_port import free_port  # noqa: E402
from korovod.ray import RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(ray_helpers)
ray.cloudpickle.register_pickle_by_value(torch_engine_training)
ray.cloudpickle.register_pickle_by_value(torch_elastic_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
RAY = str(Path(sys.executable).parent / "ray")


def _start_node(temp: str, log: Path, env: dict, *args: str) -> subprocess.Popen:
    cmd = [RAY, "start", "--block", "--num-cpus", "1", "--disable-usage-stats", "--temp-dir", temp,
           "--node-ip-address", "127.0.0.1", "--dashboard-agent-listen-port", str(free_port()),
           "--metrics-export-port", str(free_port()),
           # Workers on ports the system picks (Ray's default range, 10002-19999, holds free_port's).
           "--min-worker-port", "0", "--max-worker-port", "0", *args]
    # A session of its own: the node's processes (gcs_server, raylet, its workers) share its group.
    return subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the node's group (ray start --block stops what it started), SIGKILL after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                proc.wait()
                return
            time.sleep(0.2)


@pytest.fixture(scope="module")
def two_nodes():
    temp = ray_helpers.temp_dir("krayc-")
    env = {**ray_helpers.environ_with_ray_env(),
           # The nodes' workers import korovod: its package must be on their path.
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(korovod.__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH")]))}
    port = free_port()
    logs = Path(temp)
    nodes = []
    try:
        nodes.append(_start_node(temp, logs / "head.out", env, "--head", "--port", str(port),
                                 "--include-dashboard", "false", "--ray-client-server-port", str(free_port())))
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:  # the second node joins once the head answers
            probe = subprocess.run([RAY, "health-check", "--address", address], env=env, capture_output=True)
            if probe.returncode == 0:
                break
            assert time.monotonic() < deadline and nodes[0].poll() is None, (logs / "head.out").read_text()
            time.sleep(1)
        nodes.append(_start_node(temp, logs / "node.out", env, "--address", address))
        os.environ.update(ray_helpers.RAY_ENV)
        ray.init(address=address)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline and nodes[1].poll() is None, (logs / "node.out").read_text()
            time.sleep(1)
        yield nodes
    finally:
        ray.shutdown()
        for node in reversed(nodes):
            _stop(node)
        ray_helpers.remove(temp)


def where(_):
    import korovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum).item()
    return (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size(), total,
            ray.get_runtime_context().get_node_id())


def test_one_rank_on_each_node_and_the_training_equals_one_process(two_nodes):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60, placement_group_timeout_s=60), num_hosts=2,
                      num_workers_per_host=1)
    job.start()
    try:
        got = job.execute(where)
        # Each Ray node is a host: local rank 0 of 1 on each, cross ranks 0 and 1.
        assert [g[:7] for g in got] == [(0, 2, 0, 1, 0, 2, 3.0), (1, 2, 0, 1, 1, 2, 3.0)]
        assert got[0][7] != got[1][7], "both ranks on one Ray node"
        x, y = torch_engine_training.data()
        torch_engine_training.assert_same_model(job.run(torch_engine_training.train_fn, args=[x, y]), x, y)
        pids = job.execute(lambda _: os.getpid())
    finally:
        job.shutdown()
    ray_helpers.assert_gone(pids)


def test_two_ranks_on_one_node_do_not_fit_one_cpu_nodes(two_nodes):
    job = RayExecutor(RayExecutor.create_settings(placement_group_timeout_s=3), num_hosts=1, num_workers_per_host=2)
    with pytest.raises(TimeoutError, match="do not fit the cluster"):
        job.start()
    job.shutdown()


def test_an_elastic_job_has_a_worker_on_each_node_and_replaces_a_killed_one_there(two_nodes, tmp_path):
    x, y = torch_elastic_training.data()
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), min_workers=2, max_workers=2, elastic_timeout=60)
    job.start()
    try:
        results = elastic_checks.kill_rank_one_mid_training(
            lambda progress: job.run(torch_elastic_training.train_fn, args=[x, y, progress]), str(tmp_path))
    finally:
        job.shutdown()
    torch_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
    elastic_checks.assert_gone(ray_helpers.worker_actor_processes)


def test_an_elastic_job_goes_on_without_a_node_that_is_lost(two_nodes, tmp_path):
    """Last in this file: it stops the second node (its raylet and workers) mid-training. The
    worker there is lost; the driver's tries to start one there again fail until the node's host
    is blacklisted (Ray notices the node is gone later), and the other trains on alone."""
    x, y = torch_elastic_training.data()
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), min_workers=1, max_workers=2, elastic_timeout=60)
    job.start()
    try:
        results = elastic_checks.kill_rank_one_mid_training(
            lambda progress: job.run(torch_elastic_training.train_fn, args=[x, y, progress, 0.2]), str(tmp_path),
            kill=lambda _pid: _stop(two_nodes[1]), workers_in_all=None)
    finally:
        job.shutdown()
    torch_elastic_training.assert_finished_as_one_process(results, x, y, size=1)
