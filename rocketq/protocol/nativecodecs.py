"""The switch between rocketq's native (C) codecs and their pure-Python references.

The per-message byte work (stored-record encode and decode, the batch body walk, properties
parse and encode, Java's ``String.hashCode``) has two implementations: pure Python in
``storedrecords``, ``batchbodies``, ``messageproperties`` and ``javahash``, which is the
reference, and C in the optional extension ``rocketq._native`` (sources in ``native/``, built
by ``pip install``). This module decides, once at import, which one runs:

* ``ROCKETQ_NATIVE=0`` in the environment forces the pure code (read once; changing the
  variable later has no effect in a running process);
* without the extension (no compiler at install time), the pure code runs and a DEBUG line
  says so;
* otherwise the C code runs.

The C code gives the same results as the pure code, byte for byte, and never raises an error
of its own: for any input it does not handle (malformed, an unusual type, a value out of
range) it calls the pure function, which raises what it always raised. ``accelerated``
decorates a pure function with its C twin (``accelerated_with`` when the C code needs Python
objects, such as the class it builds); ``pure`` gives back the reference, for tests.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final, TypeVar

SWITCH: Final = "ROCKETQ_NATIVE"
"""Environment variable: ``0`` forces the pure-Python codecs."""

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def _load() -> ModuleType | None:
    if os.environ.get(SWITCH, "").strip() == "0":
        log.debug("%s=0: the pure-Python codecs are used", SWITCH)
        return None
    try:
        from rocketq import _native
    except ImportError as exc:
        log.debug("the native codecs are not built (%s): the pure-Python codecs are used", exc)
        return None
    return _native


native: Final[ModuleType | None] = _load()
"""``rocketq._native`` when the C codecs are in use, else None."""


def accelerated(pure: F) -> F:
    """``pure``'s C twin when the native codecs are in use (same name), else ``pure`` itself."""
    if native is None:
        return pure
    return native.accelerate(pure.__name__, pure)


def accelerated_with(*context: object) -> Callable[[F], F]:
    """``accelerated`` for a C twin that needs Python objects (a class to build, a parser)."""

    def decorate(pure: F) -> F:
        if native is None:
            return pure
        return native.accelerate(pure.__name__, pure, *context)

    return decorate


def accelerated_as(name: str) -> Callable[[F], F]:
    """``accelerated`` for a C twin registered under another name than the function's (a
    method such as ``IndexService.add``, whose own name says too little)."""

    def decorate(pure: F) -> F:
        if native is None:
            return pure
        return native.accelerate(name, pure)

    return decorate


def pure(function: F) -> F:
    """The pure-Python reference behind a function that ``accelerated`` may have replaced."""
    return getattr(function, "__wrapped__", function)
