"""Shelve steps an agent runs: power off and snapshot, offload, spawn on unshelve."""

from __future__ import annotations

__all__ = ["ShelvingSteps"]


class ShelvingSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""
