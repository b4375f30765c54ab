"""korovod.tensorflow on GPU tensors (tests/gpu/run-tf-gpu-tests runs it through
tests/python/run-pytest --framework tensorflow): every collective on tensors in GPU memory, results
on the GPU and right, in eager mode and in tf.function, Adasum, and a tape's gradients. Skipped
where TensorFlow sees no GPU."""

import os

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd
from adasum_reference import gpu_adasum

GPUS = tf.config.list_physical_devices("GPU")
pytestmark = pytest.mark.skipif(not GPUS, reason="TensorFlow sees no GPU (a CUDA build of TensorFlow is needed)")
if GPUS:
    # One GPU per rank while there are enough; ranks beyond share (the host-staging plane).
    mine = GPUS[int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ.get("KOROVOD_LOCAL_RANK", "0")))
                % len(GPUS)]
    tf.config.set_visible_devices(mine, "GPU")
    tf.config.experimental.set_memory_growth(mine, True)

MODES = ["eager", "function"]


def _run(mode, fn, *args):
    with tf.device("/GPU:0"):
        return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def _on_gpu(tensor) -> bool:
    return "GPU" in tensor.device


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64, tf.int32, tf.int64], ids=lambda d: d.name)
def test_allreduce_on_gpu(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    with tf.device("/GPU:0"):
        x = tf.cast(tf.fill([1000], r + 1), dtype)
    result = _run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum), x)
    assert _on_gpu(result), result.device
    np.testing.assert_allclose(tf.cast(result, tf.float64).numpy(), np.full(1000, n * (n + 1) / 2))


@pytest.mark.parametrize("mode", MODES)
def test_allgather_broadcast_alltoall_reducescatter_on_gpu(mode):
    n, r = hvd.size(), hvd.rank()
    with tf.device("/GPU:0"):
        x = tf.fill([n, 3], float(r))

    def f(x):
        return (hvd.allgather(x), hvd.broadcast(x, n - 1), hvd.alltoall(x),
                hvd.reducescatter(x, op=hvd.Sum))

    gathered, broadcast, exchanged, scattered = _run(mode, f, x)
    for t in (gathered, broadcast, exchanged, scattered):
        assert _on_gpu(t), t.device
    np.testing.assert_allclose(gathered.numpy(), np.repeat(np.arange(n, dtype=float), n)[:, None] * np.ones(3))
    np.testing.assert_allclose(broadcast.numpy(), np.full([n, 3], float(n - 1)))
    np.testing.assert_allclose(exchanged.numpy(), np.arange(n, dtype=float)[:, None] * np.ones(3))
    np.testing.assert_allclose(scattered.numpy(), np.full([1, 3], float(sum(range(n)))))


@pytest.mark.parametrize("mode", MODES)
def test_adasum_on_gpu_sums_each_hosts_ranks_then_combines_the_hosts(mode):
    """Horovod's GPU Adasum (its NCCL build): a host's ranks summed, the hosts combined by Adasum."""
    n, r = hvd.size(), hvd.rank()
    if n & (n - 1):
        pytest.skip(f"Adasum needs a power-of-2 number of ranks; this job has {n}")
    vectors = [np.random.default_rng(40 + k).normal(0.2, 1.0, 1001) for k in range(n)]
    with tf.device("/GPU:0"):
        x = tf.constant(vectors[r], tf.float32)
    result = _run(mode, lambda x: hvd.allreduce(x, op=hvd.Adasum), x)
    assert _on_gpu(result), result.device
    held = [np.float32(v).astype(np.float64) for v in vectors]  # what float32 keeps
    np.testing.assert_allclose(result.numpy(), gpu_adasum(held, hvd.local_size()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_tape_gradients_on_gpu(mode):
    with tf.device("/GPU:0"):
        variable = tf.Variable(tf.zeros([4]))

    def f():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(variable) * float(hvd.rank() + 1)
        return hvd.DistributedGradientTape(tape).gradient(loss, [variable])[0]

    grad = _run(mode, f)
    np.testing.assert_allclose(grad.numpy(), np.full(4, (hvd.size() + 1) / 2))
