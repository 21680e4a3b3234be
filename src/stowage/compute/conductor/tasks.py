"""Operations as ordered steps with `execute()` and `rollback()`, journaled.

An operation runs its steps in order. When one fails, the steps that
completed are undone in reverse; an undo that fails is logged and journaled,
never raised over the original error, because the caller must learn what
failed first. Every undo is idempotent and safe even if its execute never
ran to the end (a step whose execute raised left nothing behind by contract,
so its own rollback is not called).

The journal (`operation_steps`) holds one row per step: executing, done,
rolled_back or undo_failed. `interrupted()` lists operations a crash cut off
so the conductor can undo them when it restarts.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.db import Database
from stowage.timeutil import utcnow

__all__ = ["Step", "StepFailed", "Journal", "run_steps"]

LOG = logging.getLogger(__name__)
_J = t.operation_steps


class Step:
    """One unit of an operation; subclasses set `name` and override both methods."""

    name = "step"

    def execute(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        """Undo what execute() did; must be idempotent."""


class StepFailed(Exception):
    """`step` raised `cause`; `undone` tells whether every completed step was rolled back."""

    def __init__(self, step: Step, cause: BaseException, undo_errors: Sequence[str]) -> None:
        super().__init__(f"{step.name} failed: {cause}")
        self.step = step
        self.cause = cause
        self.undo_errors = list(undo_errors)


class Journal:
    """The journal rows of one operation."""

    def __init__(self, db: Database, operation: str, instance_uuid: str | None) -> None:
        self.db = db
        self.operation = operation
        self.instance_uuid = instance_uuid
        self.uuid = str(uuidlib.uuid4())

    def record(self, step: str, state: str, detail: str | None = None) -> None:
        now = utcnow()
        with self.db.write() as conn:
            done = conn.execute(_J.update().where(_J.c.operation_uuid == self.uuid,
                                                  _J.c.step == step)
                                .values(state=state, detail=detail, updated_at=now))
            if done.rowcount == 0:
                conn.execute(_J.insert().values(
                    operation_uuid=self.uuid, operation=self.operation,
                    instance_uuid=self.instance_uuid, step=step, state=state, detail=detail,
                    created_at=now))

    def close(self) -> None:
        """The operation ended (either way): its rows are history, not work to resume."""
        self.record("end", "done")

    @staticmethod
    def ended(db: Database, operation_uuid: str) -> None:
        """Mark an interrupted operation as dealt with."""
        with db.write() as conn:
            conn.execute(_J.insert().values(operation_uuid=operation_uuid, operation="recovered",
                                            step="end", state="done", created_at=utcnow()))


def interrupted(db: Database) -> list[dict[str, Any]]:
    """Operations with journal rows but no `end` row: cut off by a crash."""
    with db.read() as conn:
        ended = sa.select(_J.c.operation_uuid).where(_J.c.step == "end")
        rows = conn.execute(sa.select(_J).where(_J.c.operation_uuid.not_in(ended))
                            .order_by(_J.c.id)).all()
    ops: dict[str, dict[str, Any]] = {}
    for row in rows:
        op = ops.setdefault(row.operation_uuid, {"operation_uuid": row.operation_uuid,
                                                 "operation": row.operation,
                                                 "instance_uuid": row.instance_uuid,
                                                 "steps": []})
        op["steps"].append((row.step, row.state))
    return list(ops.values())


def run_steps(steps: Sequence[Step], journal: Journal) -> None:
    """Execute in order; on failure undo the completed ones in reverse and raise StepFailed."""
    completed: list[Step] = []
    for step in steps:
        journal.record(step.name, "executing")
        try:
            step.execute()
        except Exception as exc:
            journal.record(step.name, "failed", str(exc)[:1000])
            errors = undo(completed, journal)
            raise StepFailed(step, exc, errors) from exc
        journal.record(step.name, "done")
        completed.append(step)


def undo(completed: Sequence[Step], journal: Journal) -> list[str]:
    """Roll back in reverse; returns the undo failures (logged, recorded, not raised)."""
    errors: list[str] = []
    for step in reversed(completed):
        try:
            step.rollback()
        except Exception as exc:
            LOG.exception("rollback of %s failed", step.name)
            journal.record(step.name, "undo_failed", str(exc)[:1000])
            errors.append(f"{step.name}: {exc}")
        else:
            journal.record(step.name, "rolled_back")
    return errors
