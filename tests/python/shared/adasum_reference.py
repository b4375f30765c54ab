"""Adasum computed the plain way in NumPy (float64), for every framework's tests: two vectors
combine as (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b, and ranks pair up a binary tree."""

from typing import List, Sequence

import numpy as np


def adasum_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    tiny = np.sqrt(np.finfo(np.float64).tiny)
    ka = 1 - dot / (2 * aa) if aa >= tiny else 1.0
    kb = 1 - dot / (2 * bb) if bb >= tiny else 1.0
    return ka * a + kb * b


def adasum_tree(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Ranks (0, 1), (2, 3), ..., then those pairs, and so on up to one vector."""
    v: List[np.ndarray] = [np.asarray(x, np.float64).ravel() for x in vectors]
    while len(v) > 1:
        v = [adasum_pair(v[i], v[i + 1]) for i in range(0, len(v), 2)]
    return v[0]


def gpu_adasum(vectors: Sequence[np.ndarray], local_size: int) -> np.ndarray:
    """GPU tensors, as Horovod's NCCL build reduces them: each host's consecutive ranks summed,
    then the tree over the hosts."""
    v = [np.asarray(x, np.float64).ravel() for x in vectors]
    return adasum_tree([sum(v[h:h + local_size]) for h in range(0, len(v), local_size)])
