"""Fixture tests for tests/python/run-pytest itself (the ctest entry python.run_pytest_selftest)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "separate_job: run-pytest runs this test in a job of its own")
