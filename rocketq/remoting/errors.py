"""Errors an RPC can end with, as seen by the caller."""


class RemotingError(Exception):
    """Base of every transport failure."""


class RemotingConnectError(RemotingError):
    """The peer could not be reached."""


class RemotingTimeoutError(RemotingError):
    """No response arrived within the caller's timeout."""


class RemotingSendError(RemotingError):
    """The connection closed before the request was answered."""


class RemotingTooMuchRequestError(RemotingError):
    """Too many requests are already waiting on this connection."""
