"""TorchState: a model, optimizer, ElasticSampler and plain attributes kept in sync across workers
(Horovod's horovod.torch.elastic.TorchState)."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple, Type

import torch

from korovod.common.elastic import ObjectState
from korovod.torch.elastic.sampler import ElasticSampler
from korovod.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                     broadcast_parameters)
from korovod.torch.mpi_ops import is_initialized, rank


class StateHandler:
    """Saves, restores and syncs one tracked value of a kind broadcast_object cannot handle well."""

    def __init__(self, value: Any):
        self.value = value

    def save(self) -> None:
        raise NotImplementedError()

    def restore(self) -> None:
        raise NotImplementedError()

    def sync(self) -> None:
        raise NotImplementedError()

    def reset(self) -> None:
        """After a reset, before the sync: adapt to the new set of workers."""

    def set_value(self, value: Any) -> None:
        """The attribute was assigned: track the new value, committed as it is."""
        self.value = value
        self.save()


class _StateDictHandler(StateHandler):
    """A value with state_dict()/load_state_dict(): committed as a deep copy of its state_dict."""

    def __init__(self, value: Any):
        super().__init__(value)
        self._saved = copy.deepcopy(value.state_dict())

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved)


class ModelStateHandler(_StateDictHandler):
    """A torch.nn.Module: sync broadcasts rank 0's parameters and buffers in place."""

    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    """A torch.optim.Optimizer (or DistributedOptimizer): sync broadcasts rank 0's state and
    hyper-parameters (learning rate included)."""

    def restore(self) -> None:
        # torch 2's Optimizer.load_state_dict adopts the given state tensors instead of copying
        # them (torch 1 copied): the next step would update the saved commit in place, and a
        # second restore to the same commit would load those updated values.
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    """An ElasticSampler: sync adopts rank 0's epoch and progress; reset reshards it."""

    def restore(self) -> None:
        # After a failure the runtime may be gone (rank() would raise): take the committed
        # progress now and reshard only with a runtime; the reset that follows reshards anyway.
        self.value.epoch = self._saved["epoch"]
        self.value.processed_num = self._saved["processed_num"]
        if is_initialized():
            self.value.reset()

    def sync(self) -> None:
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), root_rank=0,
                                                    name="elastic.sampler"))

    def reset(self) -> None:
        # Horovod reshards only in the sync, which a removal skips: the survivors would keep the
        # old size's shards and leave the removed ranks' samples out.
        self.value.reset()


_handler_registry: List[Tuple[Type, Type[StateHandler]]] = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry() -> List[Tuple[Type, Type[StateHandler]]]:
    """The (type, handler class) pairs TorchState tries in order for each attribute."""
    return _handler_registry


def set_handler_registry(registry: List[Tuple[Type, Type[StateHandler]]]) -> None:
    """Replaces the registry's contents (for values of types of your own)."""
    _handler_registry[:] = registry


def _handler_for(value: Any):
    for value_type, handler_class in _handler_registry:
        if isinstance(value, value_type):
            return handler_class(value)
    return None


def _bcast_object(obj: Any) -> Any:
    return broadcast_object(obj, root_rank=0, name="elastic.state")


class TorchState(ObjectState):
    """State of a PyTorch training process: a model, an optimizer, and any other keyword
    arguments (models, optimizers and ElasticSamplers get their handlers; anything else must be
    picklable), each exposed as an attribute.

    commit() saves them all, restore() returns to the last commit, sync() makes every rank's
    values rank 0's.
    """

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        handlers: Dict[str, StateHandler] = {}
        plain: Dict[str, Any] = {}
        for name, value in kwargs.items():
            handler = _handler_for(value)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
        self._handlers = handlers
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=_bcast_object, get_rank=rank, **plain)

    def save(self) -> None:
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def reset(self) -> None:
        for handler in self._handlers.values():
            handler.reset()
        super().reset()

    def any_rank(self, flag: bool) -> bool:
        return any(allgather_object(bool(flag), name="elastic.any_rank"))

    def __setattr__(self, name: str, value: Any) -> None:
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers and name in self.__dict__:
            handlers[name].set_value(value)
        super().__setattr__(name, value)
