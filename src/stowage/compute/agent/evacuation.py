"""Evacuation steps an agent runs: rebuild on the destination, clean up on a returned source."""

from __future__ import annotations

__all__ = ["EvacuationSteps"]


class EvacuationSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""
