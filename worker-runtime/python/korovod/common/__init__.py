"""Framework-neutral parts of the korovod Python package (runtime state, process sets, errors)."""
