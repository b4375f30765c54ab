"""Python objects across ranks in korovod.tensorflow (broadcast_object, allgather_object) and
korovod.keras (an elastic state's sync and any_rank): both go through korovod.common.objects, as
korovod.torch does (tests/python/torch/test_functions.py checks that binding the same way), so
the three give identical results: root_rank's object, every rank's in rank order, cloudpickle
bytes, int64 lengths."""

import keras
import numpy as np

import korovod.keras as hvd_keras
import korovod.tensorflow as hvd
from korovod.common import numpy_ops, objects
from tf_helpers import check_on_all_ranks


class _LengthSpy:
    """Records (name, dtype) of the first array of everything sent through numpy_ops."""

    def __init__(self, monkeypatch):
        self.sent = []
        for op in ("broadcast", "allgather"):
            monkeypatch.setattr(numpy_ops, op, self._wrap(getattr(numpy_ops, op)))

    def _wrap(self, original):
        def spy(arrays, *args, **kwargs):
            name = kwargs.get("name", args[1] if original.__name__ == "broadcast" else args[0])
            first = arrays[0] if isinstance(arrays, list) else arrays
            self.sent.append((name, first.dtype))
            return original(arrays, *args, **kwargs)
        return spy

    def length_dtypes(self):
        return {str(dtype) for name, dtype in self.sent if name and name.endswith(".sz")}


def _mine():
    """This rank's object: 3 MiB of rank-seeded bytes and a lambda (cloudpickle's)."""
    factor = hvd.rank() + 2
    return {"rank": hvd.rank(), "blob": np.random.default_rng(hvd.rank()).bytes(3 << 20),
            "scale": lambda x: x * factor}


def _is_roots(received) -> bool:
    return (received["rank"] == 0 and received["blob"] == np.random.default_rng(0).bytes(3 << 20)
            and received["scale"](1) == 2)


def test_tensorflow_objects_cross_through_the_shared_transport_with_int64_lengths(monkeypatch):
    spy = _LengthSpy(monkeypatch)
    via_tf = hvd.broadcast_object(_mine(), root_rank=0, name="transport.broadcast")
    via_common = objects.broadcast_object(_mine(), 0, "transport.broadcast")
    mine = (hvd.rank(), b"x" * (hvd.rank() + 1))
    gathered_tf = hvd.allgather_object(mine, name="transport.gather")
    gathered_common = objects.allgather_object(mine, "transport.gather")
    lengths = spy.length_dtypes()
    ok = (_is_roots(via_tf) and _is_roots(via_common) and gathered_tf == gathered_common
          and [r for r, _ in gathered_tf] == list(range(hvd.size())) and lengths == {"int64"})
    check_on_all_ranks(ok, lambda: f"gathered {gathered_tf} vs {gathered_common}, lengths sent as {lengths}")


def test_keras_elastic_state_objects_cross_through_the_shared_transport(monkeypatch):
    keras.utils.set_random_seed(hvd.rank())
    model = keras.Sequential([keras.Input([3]), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    state = hvd_keras.elastic.KerasState(model, payload=_mine())
    spy = _LengthSpy(monkeypatch)
    state.sync()
    anyone = state.any_rank(hvd.rank() == 0)
    lengths = spy.length_dtypes()
    ok = _is_roots(state.payload) and anyone and lengths == {"int64"}
    check_on_all_ranks(ok, lambda: f"payload from rank {state.payload['rank']}, any_rank {anyone}, "
                       f"lengths sent as {lengths}")
