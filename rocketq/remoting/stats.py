"""Counters of the rare events on remoting connections, kept as plain integers.

Connections and servers bump them on the rare paths only (a bad frame, a refused or idle
connection, a peer that stopped reading), never on a request's path. ``metrics`` reports them
to Prometheus; this module imports nothing, so an SDK client does not pull in the exporter.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RemotingStats:
    bad_frames: int = 0
    """Connections closed for a frame that could not be decoded (garbage, oversized, ...)."""
    reads_paused: int = 0
    """Times a connection stopped reading because its peer did not read its answers."""
    backlog_aborts: int = 0
    """Connections aborted because their peer read none of ``MAX_BACKLOG`` bytes of answers."""
    idle_closed: int = 0
    """Connections closed after ``serverChannelMaxIdleTimeSeconds`` without traffic."""
    refused: int = 0
    """Connections closed on accept: over the connection cap or the descriptor reserve."""
