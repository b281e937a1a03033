"""``ConsoleConfig``: what one console serves and how (set by ``rocketq console``'s options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocketq.admin.client import DEFAULT_TIMEOUT
from rocketq.console.users import User


@dataclass(frozen=True)
class ConsoleConfig:
    namesrv_addr: str
    users: dict[str, User]
    users_file: Path | None = None
    """Where ``users`` came from: the console follows changes to it (``users.Directory.refresh``)."""
    audit_file: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    """Seconds per admin request."""
    secure_cookies: bool = False
    """Mark the session cookie Secure: set it when the console is reached over HTTPS."""
    sample_interval: float = 15.0
    """Seconds between the chart samples (``rocketq.console.history``); 0 turns sampling off."""
    access_key: str = ""
    """An ACL account the console signs its admin requests with (brokers with ACL on)."""
    secret_key: str = field(default="", repr=False)
