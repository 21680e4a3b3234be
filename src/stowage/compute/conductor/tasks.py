"""Operations as ordered steps with `execute()` and `rollback()`, journaled for crashes.

An operation runs its steps in order. When one fails, the steps that
completed are undone in reverse; an undo that fails is logged and journaled,
never raised over the original error, because the caller must learn what
failed first. Every undo is idempotent and safe even if its execute never
ran to the end (a step whose execute raised left nothing behind by contract,
so its own rollback is not called).

The journal (`operation_steps`) holds one row per step of an operation:

    accepted ─> <step> executing ─> done ─> ... ─> end          (ran to its end)
                    └─ failed ─> <earlier steps> rolled_back | undo_failed ─> end

`accepted` is written by the API in the same transaction that moves the
instance into its task state, with the operation's arguments as JSON, so an
operation whose cast a crash lost is still known. `end` is written when the
operation reached a final state either way. On start the conductor reads the
operations without `end` (`interrupted()`) and finishes or undoes each one
(the `RECOVERY` table in `manager.py`); it writes `end` only once that has
succeeded, so a crash during recovery leaves the work for the next start.

For crash tests only, `crash_hook("operation:step:state")` ends the process
at once (as kill -9 would) right after the journal records that point.
"""

from __future__ import annotations

import json
import logging
import os
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.db import Database
from stowage.timeutil import utcnow

__all__ = ["Step", "StepFailed", "Journal", "Interrupted", "CrashHook", "ACCEPTED",
           "accept", "end_accepted", "interrupted", "run_steps", "undo", "roll_back",
           "crash_hook"]

LOG = logging.getLogger(__name__)
_J = t.operation_steps
ACCEPTED = "accepted"
END = "end"
# Journal states a step can be left in, and which of them recovery must undo.
_TO_UNDO = ("executing", "done", "undo_failed")
CrashHook = Callable[[str, str, str], None]


class Step:
    """One unit of an operation; subclasses set `name` and override both methods."""

    name = "step"

    def execute(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        """Undo what execute() did; must be idempotent and safe if execute never ran."""

    def journal_detail(self) -> str | None:
        """What recovery needs to know of this step, recorded as it starts (JSON or None)."""
        return None


class StepFailed(Exception):
    """`step` raised `cause`; `undone` tells whether every completed step was rolled back."""

    def __init__(self, step: Step, cause: BaseException, undo_errors: Sequence[str]) -> None:
        super().__init__(f"{step.name} failed: {cause}")
        self.step = step
        self.cause = cause
        self.undo_errors = list(undo_errors)


def crash_hook(spec: str) -> CrashHook | None:
    """Testing only: exit the process, with no cleanup, once the journal records `spec`.

    `spec` is "operation:step:state" (e.g. "resize:resize_instance:done", or
    "revert_resize:accepted:done" for a cast lost after the API answered).
    """
    if not spec:
        return None
    want = tuple(spec.split(":"))
    if len(want) != 3:
        raise ValueError(f"crash_at must be 'operation:step:state', not {spec!r}")

    def hook(operation: str, step: str, state: str) -> None:
        if (operation, step, state) == want:
            os._exit(137)  # like SIGKILL: no finally blocks, no flush, no goodbye

    return hook


def accept(conn: Connection, operation: str, instance_uuid: str, request_id: str,
           **args: Any) -> str:
    """Record an accepted operation in the caller's transaction; returns its uuid."""
    uuid = str(uuidlib.uuid4())
    conn.execute(_J.insert().values(
        operation_uuid=uuid, operation=operation, instance_uuid=instance_uuid, step=ACCEPTED,
        state="done", detail=json.dumps({"request_id": request_id, "args": args}),
        created_at=utcnow()))
    return uuid


def end_accepted(conn: Connection, operation_uuid: str, operation: str) -> None:
    """An accepted operation will never run (its cast failed and the API undid it)."""
    conn.execute(_J.insert().values(operation_uuid=operation_uuid, operation=operation,
                                    step=END, state="done", created_at=utcnow()))


class Journal:
    """The journal rows of one operation; `hook` is the crash tests' `crash_hook`."""

    def __init__(self, db: Database, operation: str, instance_uuid: str | None,
                 uuid: str | None = None, hook: CrashHook | None = None) -> None:
        self.db = db
        self.operation = operation
        self.instance_uuid = instance_uuid
        self.uuid = uuid or str(uuidlib.uuid4())
        self.hook = hook

    def record(self, step: str, state: str, detail: str | None = None) -> None:
        """Upsert the row of `step`; a None detail keeps the one recorded before."""
        now = utcnow()
        values: dict[str, Any] = {"state": state, "updated_at": now}
        if detail is not None:
            values["detail"] = detail
        with self.db.write() as conn:
            done = conn.execute(_J.update().where(_J.c.operation_uuid == self.uuid,
                                                  _J.c.step == step).values(**values))
            if done.rowcount == 0:
                conn.execute(_J.insert().values(
                    operation_uuid=self.uuid, operation=self.operation,
                    instance_uuid=self.instance_uuid, step=step, state=state, detail=detail,
                    created_at=now))
        self.reached(step, state)

    def reached(self, step: str, state: str) -> None:
        """A point of the operation was passed (crash tests may end the process here)."""
        if self.hook is not None:
            self.hook(self.operation, step, state)

    def close(self) -> None:
        """The operation ended (either way): its rows are history, not work to resume."""
        self.record(END, "done")


@dataclass
class Interrupted:
    """An operation with journal rows but no `end`: what a crash cut off."""

    operation_uuid: str
    operation: str
    instance_uuid: str | None
    request_id: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    # step -> (state, detail), in the order the steps were first recorded
    steps: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def state(self, step: str) -> str | None:
        return self.steps[step][0] if step in self.steps else None

    def detail(self, step: str) -> Any:
        """The JSON detail recorded with `step`, or None."""
        raw = self.steps.get(step, (None, None))[1]
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None


def interrupted(db: Database) -> list[Interrupted]:
    """Operations with journal rows but no `end` row, oldest first."""
    with db.read() as conn:
        ended = sa.select(_J.c.operation_uuid).where(_J.c.step == END)
        # SELECT * FROM operation_steps WHERE operation_uuid NOT IN
        #   (SELECT operation_uuid FROM operation_steps WHERE step = 'end') ORDER BY id
        rows = conn.execute(sa.select(_J).where(_J.c.operation_uuid.not_in(ended))
                            .order_by(_J.c.id)).all()
    ops: dict[str, Interrupted] = {}
    for row in rows:
        op = ops.setdefault(row.operation_uuid, Interrupted(row.operation_uuid, row.operation,
                                                            row.instance_uuid))
        op.steps[row.step] = (row.state, row.detail)
        if row.step == ACCEPTED and row.detail:
            accepted = json.loads(row.detail)
            op.request_id = accepted.get("request_id")
            op.args = dict(accepted.get("args") or {})
    return list(ops.values())


def run_steps(steps: Sequence[Step], journal: Journal) -> None:
    """Execute in order; on failure undo the completed ones in reverse and raise StepFailed."""
    completed: list[Step] = []
    for step in steps:
        journal.record(step.name, "executing", step.journal_detail())
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


def roll_back(steps: Sequence[Step], states: Mapping[str, str | None],
              journal: Journal) -> list[str]:
    """Recovery: undo in reverse the steps a crash left executing, done or half-undone.

    Steps never started, already rolled back, or whose execute raised (which
    leaves nothing behind) are skipped; rollbacks are idempotent, so a crash
    during this leaves the next start the same work to redo.
    """
    return undo([s for s in steps if states.get(s.name) in _TO_UNDO], journal)
