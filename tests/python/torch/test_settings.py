"""korovod.common.settings: the Python package's own environment variables, parsed once
(docs/runtime-config.md, "The Python package's own variables"). Needs no framework."""

from pathlib import Path

from korovod.common import settings
from korovod.common.settings import Settings


def test_nothing_set_gives_the_documented_defaults():
    assert Settings.from_environment({}) == Settings(elastic=False, library=None, tf_native_ops=True)


def test_elastic_mode_is_a_1_in_either_name():
    assert Settings.from_environment({"KOROVOD_ELASTIC": "1"}).elastic
    assert Settings.from_environment({"HOROVOD_ELASTIC": "1"}).elastic
    assert Settings.from_environment({"KOROVOD_ELASTIC": "0", "HOROVOD_ELASTIC": "1"}).elastic
    for value in ("0", "", "true", "yes"):
        assert not Settings.from_environment({"KOROVOD_ELASTIC": value}).elastic, value


def test_library_and_tf_native_ops():
    assert Settings.from_environment({"KOROVOD_LIBRARY": "/x/libkorovod.so"}).library == Path("/x/libkorovod.so")
    assert Settings.from_environment({"KOROVOD_LIBRARY": ""}).library is None
    assert not Settings.from_environment({"KOROVOD_TF_NATIVE_OPS": "0"}).tf_native_ops
    assert Settings.from_environment({"KOROVOD_TF_NATIVE_OPS": "false"}).tf_native_ops


def test_the_environment_is_parsed_once_per_process(monkeypatch):
    first = settings.current()
    monkeypatch.setenv("KOROVOD_TF_NATIVE_OPS", "0" if first.tf_native_ops else "1")
    assert settings.current() is first
