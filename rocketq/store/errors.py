"""Why a store cannot open: typed errors with one-line messages.

Everything ``MessageStore.open`` cannot get past is a ``StoreError``; no raw OSError or
ValueError escapes it, so the broker's command line can print ``str(error)`` as one line and
exit. Bad settings are ``rocketq.settings.SettingsError``, raised by ``StoreSettings.validate``
(at config-load time, and again when a ``MessageStore`` is made).
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """The store cannot open: locked, unreadable or damaged files, no space to recover."""


class StoreFileError(StoreError):
    """A store file is missing, misnamed or of the wrong size; the store must not start on it."""


class StoreLockedError(StoreError):
    """Another process holds the store's lock file."""


def describe(exc: OSError) -> str:
    """``path: reason`` for an OSError, on one line."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason
