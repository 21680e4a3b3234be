"""Live migration steps an agent runs: pre-checks on dest and source, the copy, rollback."""

from __future__ import annotations

__all__ = ["LiveMigrationSteps"]


class LiveMigrationSteps:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points of one operation's steps."""
