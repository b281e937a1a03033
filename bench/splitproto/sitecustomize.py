"""Applies a ``designs`` prototype to a broker process when ``ROCKETQ_SPLIT`` names one.

``bench/run_split.py`` puts this directory first on ``PYTHONPATH`` for the processes of a
run; Python imports ``sitecustomize`` at start-up. Without ``ROCKETQ_SPLIT`` it does nothing.
The patch waits until the broker's server module is imported, so other processes (the
name server, the benchmark clients) never load the store or the prototypes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

TARGET = "rocketq.broker.server"


class _AfterBrokerImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        original = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            import designs  # this directory is on sys.path: it is where sitecustomize came from

            designs.from_environment()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if os.environ.get("ROCKETQ_SPLIT"):
    sys.meta_path.insert(0, _AfterBrokerImport())
