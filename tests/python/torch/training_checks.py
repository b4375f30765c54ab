"""Helpers shared by the training-wrapper tests (optimizer, functions, SyncBatchNorm, convergence).

Every test runs on every rank of one job. A check that failed on one rank only would leave the
other ranks running ahead into the next test's collectives, so checks run through
``check_on_all_ranks``: each rank runs it, all ranks exchange the outcome, and all fail together.
"""

import torch

import korovod.torch as hvd


def check_on_all_ranks(check, *args, **kwargs) -> None:
    """Runs ``check(*args, **kwargs)`` here; raises AssertionError on every rank if it raised
    AssertionError on any, with each failing rank's message."""
    try:
        check(*args, **kwargs)
        failure = None
    except AssertionError as error:
        failure = 'rank %d: %s' % (hvd.rank(), error)
    failures = [f for f in hvd.allgather_object(failure, name='training_checks.outcome') if f]
    assert not failures, '\n'.join(failures)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str, rtol: float,
                 atol: float) -> None:
    assert actual is not None, '%s is None' % what
    assert actual.shape == expected.shape, '%s: shape %s, expected %s' % (
        what, tuple(actual.shape), tuple(expected.shape))
    difference = (actual.double() - expected.double()).abs()
    limit = atol + rtol * expected.double().abs()
    assert bool((difference <= limit).all()), '%s: max difference %.3g (tolerance %g + %g * |x|)' % (
        what, float(difference.max()), atol, rtol)
