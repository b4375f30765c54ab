"""Rank 0's progress lines in a test of a binding: capture(monkeypatch) puts a reporter on the real
runtime and clock that writes into a list in place of the process's own, for one test."""

import json
from typing import Dict, List

from korovod.common._state import state
from korovod.common.progress import PREFIX, ProgressReporter


def capture(monkeypatch, interval: float = 1e-9) -> List[str]:
    """The list this process's progress lines go to; with the default interval one line per step."""
    written: List[str] = []
    reporter = ProgressReporter(state._rank_and_size, lambda: interval, write=written.append)
    monkeypatch.setattr(state, "progress", reporter)
    return written


def parse(lines: List[str]) -> List[Dict]:
    assert all(line.startswith(PREFIX + "{") for line in lines), lines
    return [json.loads(line[len(PREFIX):]) for line in lines]
