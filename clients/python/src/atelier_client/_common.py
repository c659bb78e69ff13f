"""Small pieces shared by the sync and async clients."""

from __future__ import annotations

from typing import Protocol


class StatusLike(Protocol):
    """A status object that says whether its run has ended."""

    @property
    def done(self) -> bool: ...


def check_poll_interval(poll_interval: float) -> None:
    """Refuses a polling interval that would hammer the server."""
    if not poll_interval > 0:
        raise ValueError("poll_interval must be a positive number of seconds")
