#!/usr/bin/python3
"""Elastic training under korovodrun's elastic driver on this machine (issue 13 §5), PyTorch and
TensorFlow.

An elastic example -- examples/pytorch/pytorch_elastic_digits.py (korovod.torch.elastic), or
examples/tensorflow/tensorflow_elastic_digits.py (korovod.tensorflow.elastic) with
KOROVOD_ELASTIC_EXAMPLE / --example -- runs under `korovodrun --host-discovery-script`
(a file of hosts): the job scales 2 -> 3 -> 2 workers while it trains, then one worker, chosen at
random, is killed with SIGKILL at a random moment, N times (the driver starts a replacement,
which joins). Then training is stopped. Checks:
  - korovodrun exits 0 and every worker of the last round ends with identical weights;
  - every resume of a surviving worker starts at or after its last completed commit (the steps
    redone never exceed those since the last commit);
  - the workers that resume together resume with identical weights (the sync from rank 0);
  - no event takes longer than --bound seconds (nothing hangs).

As pytest (ctest python.<torch>.elastic_korovodrun and python.tf<X.Y>.elastic_korovodrun, the CI
size: the scaling and 2 kills):
    KOROVOD_BUILD_DIR=build python3 -m pytest tests/python/elastic
    KOROVOD_BUILD_DIR=build KOROVOD_ELASTIC_EXAMPLE=examples/tensorflow/tensorflow_elastic_digits.py \
        ~/.cache/korovod/venv-tf2.21.0/bin/python -m pytest tests/python/elastic
Full (20 kills), printing each event's timing:
    tests/python/elastic/test_elastic_korovodrun.py --build-dir build --kills 20
"""

import argparse
import glob
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "pytorch" / "pytorch_elastic_digits.py"


class Failure(AssertionError):
    pass


class Job:
    """korovodrun with a hosts file as discovery, running the example with --events."""

    def __init__(self, build_dir: Path, python: str, work: Path, bound: float, log=print, example: Path = EXAMPLE):
        self.work, self.bound, self.log = work, bound, log
        self.hosts = work / "hosts"
        self.events_dir = work / "events"
        self.stop_file = work / "stop"
        self.output = work / "korovodrun.log"
        self.set_hosts("localhost:2")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python")] +
                                            [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.pop("KOROVOD_LIBRARY", None)
        env.setdefault("OMP_NUM_THREADS", "1")
        command = [str(build_dir / "bin" / "korovodrun"), "-np", "2", "--min-np", "1", "--max-np", "3",
                   # Kills are the test, not a faulty host: never blacklist localhost.
                   "--blacklist-after-failures", "1000",
                   "--host-discovery-script", f"cat {self.hosts}",
                   python, str(example), "--epochs", "100000", "--batches-per-commit", "5",
                   "--stop-file", str(self.stop_file), "--events", str(self.events_dir)]
        self.process = subprocess.Popen(command, env=env, stdout=open(self.output, "w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def set_hosts(self, hosts: str) -> None:
        temporary = self.hosts.with_suffix(".tmp")
        temporary.write_text(hosts + "\n")
        os.replace(temporary, self.hosts)  # the driver never reads a half-written file

    def events(self) -> list:
        records = []
        for path in glob.glob(str(self.events_dir / "*.jsonl")):
            with open(path) as f:
                for line in f:
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        pass  # a line being written
        return sorted(records, key=lambda r: r["time"])

    def wait_for(self, what: str, predicate, since: float) -> list:
        """Polls the events until predicate(events after `since`) is true; fails after the bound."""
        deadline = time.time() + self.bound
        while True:
            recent = [e for e in self.events() if e["time"] >= since]
            if predicate(recent):
                return recent
            if self.process.poll() is not None:
                raise Failure(f"korovodrun exited ({self.process.returncode}) while waiting for {what}")
            if time.time() > deadline:
                raise Failure(f"no {what} within {self.bound:.0f} s (a hang?)")
            time.sleep(0.1)

    def wait_for_size(self, size: int, since: float, new_pid: bool = False, known=()) -> list:
        """All `size` members of a round resumed after `since` (one of them new if new_pid)."""
        def ready(recent):
            resumed = {e["pid"]: e for e in recent if e["event"] == "resume" and e["size"] == size}
            if len(resumed) < size or not all(self.alive(pid) for pid in resumed):
                return False
            if new_pid and not set(resumed) - set(known):
                return False
            later = [e for e in recent if e["event"] == "commit" and e["size"] == size]
            return bool(later) and later[-1]["time"] > max(e["time"] for e in resumed.values())
        recent = self.wait_for(f"{size} workers resumed and committing", ready, since)
        return sorted({e["pid"] for e in recent if e["event"] == "resume" and e["size"] == size
                       and self.alive(e["pid"])})

    @staticmethod
    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self) -> int:
        self.stop_file.touch()
        try:
            return self.process.wait(timeout=self.bound)
        except subprocess.TimeoutExpired:
            raise Failure(f"korovodrun still running {self.bound:.0f} s after the stop file")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def check_events(events: list) -> dict:
    """The checks that need only the event logs; returns a summary."""
    by_pid = {}
    for e in events:
        by_pid.setdefault(e["pid"], []).append(e)
    resumes = 0
    for pid, mine in by_pid.items():
        last_commit = None
        for e in mine:
            if e["event"] == "resume":
                resumes += 1
                if last_commit is not None and e["step"] < last_commit:
                    raise Failure(f"worker pid {pid} resumed at step {e['step']}, before its last "
                                  f"completed commit at step {last_commit}")
            elif e["event"] == "commit":
                last_commit = e["step"]
    groups = {}
    for e in events:
        if e["event"] == "resume":
            groups.setdefault((e["epoch"], e["step"], e["size"]), set()).add(e["digest"])
    for key, digests in groups.items():
        if len(digests) > 1:
            raise Failure(f"workers resumed at (epoch, step, size) {key} with different weights: {digests}")
    ends = [e for e in events if e["event"] == "end"]
    if not ends:
        raise Failure("no worker reached the end of training")
    if len({e["digest"] for e in ends}) != 1 or len({e["step"] for e in ends}) != 1:
        raise Failure("workers ended with different weights or steps: " +
                      ", ".join(f"rank {e['rank']}: step {e['step']} weights {e['digest']}" for e in ends))
    if len(ends) != ends[0]["size"]:
        raise Failure(f"{len(ends)} workers ended, the last round had {ends[0]['size']}")
    return dict(resumes=resumes, final_size=ends[0]["size"],
                final_step=ends[0]["step"], weights=ends[0]["digest"], accuracy=ends[0]["accuracy"])


def run_scenario(build_dir: Path, python: str, kills: int, bound: float, seed: int, log=print,
                 example: Path = EXAMPLE) -> dict:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="korovod-elastic-") as work:
        job = Job(build_dir, python, Path(work), bound, log, example)
        try:
            t0 = time.time()
            members = job.wait_for_size(2, 0)
            log(f"round 1: 2 workers training ({time.time() - t0:.1f} s after the start)")
            t = time.time()
            job.set_hosts("localhost:3")
            members = job.wait_for_size(3, t, new_pid=True, known=members)
            log(f"scaled 2 -> 3 in {time.time() - t:.1f} s")
            t = time.time()
            job.set_hosts("localhost:2")
            members = job.wait_for_size(2, t)
            log(f"scaled 3 -> 2 in {time.time() - t:.1f} s")
            timings = []
            for kill in range(1, kills + 1):
                time.sleep(rng.uniform(0.0, 2.5))  # a random point of the training
                victim = rng.choice(members)
                t = time.time()
                os.kill(victim, signal.SIGKILL)
                survivors = [p for p in members if p != victim]
                job.wait_for("a survivor's commit after the kill",
                             lambda recent: any(e["event"] == "commit" and e["pid"] in survivors
                                                for e in recent), t)
                resumed = time.time() - t
                members = job.wait_for_size(2, t, new_pid=True, known=members)
                rejoined = time.time() - t
                timings.append((resumed, rejoined))
                log(f"kill {kill}/{kills}: pid {victim}; survivors committing after {resumed:.2f} s, "
                    f"back to 2 workers after {rejoined:.1f} s")
            code = job.stop()
            if code != 0:
                raise Failure(f"korovodrun exited with {code}")
            summary = check_events(job.events())
            summary.update(kills=kills, scale="2 -> 3 -> 2")
            if timings:
                summary.update(max_kill_to_survivor_commit_s=round(max(t for t, _ in timings), 2),
                               max_kill_to_two_workers_s=round(max(t for _, t in timings), 1))
            return summary
        except BaseException:
            job.kill()
            output = job.output.read_text(errors="replace").splitlines()
            log("---- last 60 lines of korovodrun's output\n" + "\n".join(output[-60:]))
            raise


# ---- pytest (ctest: the CI size) ----------------------------------------------------------------
try:
    import pytest
except ImportError:  # the command line needs no pytest
    pytest = None

if pytest is not None:
    @pytest.fixture(autouse=True)
    def _aligned_ranks():
        """Overrides tests/python/conftest.py's: this test starts jobs, it is not a rank of one."""
        yield


def test_scale_and_kills_end_with_identical_weights():

    build_dir = Path(os.environ.get("KOROVOD_BUILD_DIR", REPO / "build")).resolve()
    if not (build_dir / "bin" / "korovodrun").exists():
        pytest.skip(f"no {build_dir}/bin/korovodrun (build the korovodrun target)")
    kills = int(os.environ.get("KOROVOD_ELASTIC_KILLS", "2"))
    example = Path(os.environ.get("KOROVOD_ELASTIC_EXAMPLE", EXAMPLE)).resolve()
    summary = run_scenario(build_dir, sys.executable, kills, bound=120.0, seed=kills, example=example)
    print(json.dumps(summary))
    assert summary["final_size"] == 2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=str(REPO / "build"), help="build tree with bin/korovodrun and python/")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="interpreter with sklearn and the example's framework (torch, or tensorflow)")
    p.add_argument("--example", default=str(EXAMPLE),
                   help="the elastic example to run (or examples/tensorflow/tensorflow_elastic_digits.py)")
    p.add_argument("--kills", type=int, default=20, help="workers to kill -9, one after another")
    p.add_argument("--bound", type=float, default=120.0, help="seconds any event may take before it counts as a hang")
    p.add_argument("--seed", type=int, default=1, help="seed of the random victims and moments")
    args = p.parse_args(argv)
    summary = run_scenario(Path(args.build_dir).resolve(), args.python, args.kills, args.bound, args.seed,
                           log=lambda m: print(m, flush=True), example=Path(args.example).resolve())
    print("PASSED: " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"FAILED: {failure}")
        sys.exit(1)
