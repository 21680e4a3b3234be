"""The scheduler: request spec -> candidates -> filters -> weighers -> claim.

The pipeline is drawn in `manager.py`. Exceptions that leave it::

    NoValidHost     nothing fits (crosses the RPC seam as RemoteError("NoValidHost", ...))
"""

from __future__ import annotations

__all__ = ["NoValidHost"]


class NoValidHost(Exception):
    """Nova's wording: "No valid host was found. " followed by the reason."""

    def __init__(self, reason: str = "", eliminated_by: str = "Placement") -> None:
        super().__init__(f"No valid host was found. {reason}")
        self.reason = reason
        self.eliminated_by = eliminated_by  # the metrics' `filter` label (metrics/process.py)
