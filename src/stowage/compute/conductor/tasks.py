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
operation whose cast a crash lost is still known. `run_steps` writes its
rows in `Journal.batch()` transactions together with the records and
instance action events that go with them: one before each step that acts,
one at the end. `end` is written when the operation reached a final state
either way. The conductor that runs an operation holds a lease on it in
the `accepted` row (`leases.py`): each journal transaction claims or
confirms it, the one with `end` releases it, and one whose lease another
conductor took raises `LeaseLost` and writes nothing. A conductor takes over
the operations whose lease expired (`interrupted()` lists every open one)
and finishes or undoes each (the `RECOVERY` table in `manager.py`); it
writes `end` only once that has succeeded, so a crash during recovery
leaves the work for the next conductor.

For crash tests only, `crash_hook("operation:step:state")` ends the process
at once (as kill -9 would) right after the journal records that point.
"""

from __future__ import annotations

import json
import logging
import os
import uuid as uuidlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.conductor import leases as lease
from stowage.compute.conductor.leases import Leases
from stowage.db import Database
from stowage.db.statements import Sql
from stowage.metrics import process as metrics
from stowage.timeutil import utcnow

__all__ = ["Step", "StepFailed", "Journal", "Batch", "Events", "Interrupted", "CrashHook",
           "ACCEPTED", "END", "accept", "exists", "end_accepted", "interrupted", "operation",
           "step_states", "run_steps",
           "undo", "roll_back", "crash_hook"]

LOG = logging.getLogger(__name__)
_J = t.operation_steps
ACCEPTED = "accepted"
END = "end"
# Journal states a step can be left in, and which of them recovery must undo.
_TO_UNDO = ("executing", "done", "undo_failed")
CrashHook = Callable[[str, str, str], None]

_INSERT = Sql("INSERT INTO operation_steps (operation_uuid, operation, instance_uuid, step, "
              "state, detail, created_at) VALUES (:uuid, :operation, :instance_uuid, :step, "
              ":state, :detail, :now)")
# The head of an operation the API accepted: no owner yet, unclaimed since :now.
_ACCEPT = Sql("INSERT INTO operation_steps (operation_uuid, operation, instance_uuid, step, "
              "state, detail, created_at, lease_expires) VALUES (:uuid, :operation, "
              ":instance_uuid, 'accepted', 'done', :detail, :now, :now)")
_UPDATE = Sql("UPDATE operation_steps SET state = :state, updated_at = :now "
              "WHERE operation_uuid = :uuid AND step = :step")
_UPDATE_DETAIL = Sql("UPDATE operation_steps SET state = :state, detail = :detail, "
                     "updated_at = :now WHERE operation_uuid = :uuid AND step = :step")


class Events(Protocol):
    """Instance action events of the operation's instance (`Ops.events` provides them)."""

    def start(self, conn: Connection, event: str, host: str | None) -> None: ...

    def finish(self, conn: Connection, event: str, error: BaseException | None = None
               ) -> None: ...

    def committed(self, conn: Connection) -> None: ...


class Step:
    """One unit of an operation; subclasses set `name` and override what they need.

    `before()` and `after()` write records in the journal's transactions:
    `before()`'s commit with the step's `executing` row, before `execute()`
    acts; `after()`'s with its `done` row (and the next step's `executing`).
    A step whose `execute()` does nothing outside the database sets `acts`
    to False and does its writes in `before()`: it is journaled executing and
    done in that one transaction. `event` names the instance action event
    recorded around `execute()`.
    """

    name = "step"
    acts = True
    event: str | None = None

    def event_host(self) -> str | None:
        return None

    def before(self, conn: Connection) -> None:
        """Records that must be durable before the step acts."""

    def execute(self) -> None:
        """The step's action: an agent, the scheduler or Placement (nothing if not `acts`)."""

    def after(self, conn: Connection) -> None:
        """Records of what execute() did; raising here means the step failed after acting."""

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


def accept(conn: Connection, operation: str, instance_uuid: str, request_id: str, *,
           operation_uuid: str | None = None, **args: Any) -> str:
    """Record an accepted operation in the caller's transaction; returns its uuid
    (`operation_uuid` when given: a continuation written again must be the same)."""
    uuid = operation_uuid or str(uuidlib.uuid4())
    _ACCEPT.run(conn, uuid=uuid, operation=operation, instance_uuid=instance_uuid,
                now=utcnow(), detail=json.dumps({"request_id": request_id, "args": args,
                                                 "accepted_by": lease.this_process()}))
    return uuid


def exists(conn: Connection, operation_uuid: str) -> bool:
    """The operation has a journal row (ended or not)."""
    return conn.execute(sa.select(_J.c.id).where(
        _J.c.operation_uuid == operation_uuid).limit(1)).first() is not None


def end_accepted(conn: Connection, operation_uuid: str, operation: str) -> None:
    """An accepted operation will never run (its cast failed and the API undid it)."""
    _INSERT.run(conn, uuid=operation_uuid, operation=operation, instance_uuid=None, step=END,
                state="done", detail=None, now=utcnow())
    lease.release(conn, operation_uuid)


class Journal:
    """The journal rows of one operation; `hook` is the crash tests' `crash_hook`.

    `existing` names the steps that already have a row (None: unknown, so
    every write is an upsert); a fresh operation passes none, and its rows
    are inserted once and updated after. `events` records the instance
    action events of the steps run under this journal. With `leases`, every
    transaction claims (unless `claimed`) or confirms the conductor's lease
    on the operation, and raises `LeaseLost` when another conductor has it.
    """

    def __init__(self, db: Database, operation: str, instance_uuid: str | None,
                 uuid: str | None = None, hook: CrashHook | None = None,
                 existing: Collection[str] | None = None, events: Events | None = None,
                 leases: Leases | None = None, claimed: bool = False) -> None:
        self.db = db
        self.operation = operation
        self.instance_uuid = instance_uuid
        self.uuid = uuid or str(uuidlib.uuid4())
        self.hook = hook
        self.events = events
        self.closed = False
        self.leases = leases
        self.claimed = claimed
        self._rows = set(existing) if existing is not None else None
        # A journal the conductor opened itself has no head yet: its claim inserts one.
        self._headless = uuid is None or (existing is not None and ACCEPTED not in existing)

    @contextmanager
    def batch(self) -> Iterator[Batch]:
        """One write transaction for journal rows and the records that go with them;
        the crash points they pass are reached once it committed."""
        with self.db.write() as conn:
            batch = Batch(self, conn)
            yield batch
            ending = any(step == END for step, _ in batch.points)
            self._lease_in(conn, ending)
        if self.leases is not None:
            self.claimed = True
            self.leases.committed(self.uuid, ending)
        if self._rows is not None:
            self._rows.update(batch.inserted)
        if self.events is not None:
            self.events.committed(batch.conn)
        for step, state in batch.points:
            self.closed = self.closed or step == END
            self.reached(step, state)

    def _lease_in(self, conn: Connection, ending: bool) -> None:
        """Last statement of every transaction: the lease is (still) ours, or LeaseLost."""
        if self.leases is None:
            if ending:
                lease.release(conn, self.uuid)
        elif self.claimed:
            self.leases.confirm_in(conn, self.uuid, ending)
        else:
            head = (self.operation, self.instance_uuid) if self._headless else None
            self.leases.claim_in(conn, self.uuid, head, ending)

    def claim(self) -> None:
        """Take the lease now, in a transaction of its own: for an operation that acts
        before its first journal write (a cast that comes too late must not act)."""
        if self.leases is not None and not self.claimed:
            with self.batch():
                pass

    def guard(self) -> None:
        """Before the operation acts: LeaseLost if another conductor took it over."""
        if self.leases is not None and self.claimed:
            self.leases.guard(self.uuid)

    def record(self, step: str, state: str, detail: str | None = None) -> None:
        """Upsert the row of `step` in its own transaction; a None detail keeps the old one."""
        with self.batch() as batch:
            batch.record(step, state, detail)

    def _write(self, conn: Connection, step: str, state: str, detail: str | None,
               inserted: set[str]) -> None:
        known = self._rows is None or step in self._rows or step in inserted
        values = {"uuid": self.uuid, "step": step, "state": state, "now": utcnow()}
        if known:
            update = _UPDATE if detail is None else _UPDATE_DETAIL
            if update.run(conn, detail=detail, **values):
                return
        _INSERT.run(conn, operation=self.operation, instance_uuid=self.instance_uuid,
                    detail=detail, **values)
        inserted.add(step)

    def reached(self, step: str, state: str) -> None:
        """A point of the operation was passed (crash tests may end the process here)."""
        if self.hook is not None:
            self.hook(self.operation, step, state)
        self.guard()  # a process paused here past its lease goes no further

    def close(self) -> None:
        """The operation ended (either way): its rows are history, not work to resume."""
        if not self.closed:
            self.record(END, "done")


class Batch:
    """The journal's part of one write transaction (`Journal.batch()`)."""

    def __init__(self, journal: Journal, conn: Connection) -> None:
        self.journal = journal
        self.conn = conn
        self.points: list[tuple[str, str]] = []
        self.inserted: set[str] = set()

    def record(self, step: str, state: str, detail: str | None = None) -> None:
        self.journal._write(self.conn, step, state, detail, self.inserted)
        self.points.append((step, state))

    def end(self) -> None:
        """The operation ends with this transaction."""
        self.record(END, "done")

    def passed(self, step: str, state: str) -> None:
        """A point with no row of its own: the step's row gets its final state in this
        same transaction (crash tests still stop here, once it committed)."""
        self.points.append((step, state))

    def start(self, step: Step) -> None:
        """`step` is executing: its row, its records, its event."""
        self.record(step.name, "executing", step.journal_detail())
        step.before(self.conn)
        if step.event is not None and self.journal.events is not None:
            self.journal.events.start(self.conn, step.event, step.event_host())

    def at_once(self, step: Step) -> None:
        """A step that does not act: executing and done in this transaction, one row."""
        self.passed(step.name, "executing")
        step.before(self.conn)
        if step.event is not None and self.journal.events is not None:
            self.journal.events.start(self.conn, step.event, step.event_host())
        self.done(step, step.journal_detail())

    def done(self, step: Step, detail: str | None = None) -> None:
        """`step` completed: its records, its event, its row."""
        step.after(self.conn)
        if step.event is not None and self.journal.events is not None:
            self.journal.events.finish(self.conn, step.event)
        self.record(step.name, "done", detail)

    def failed(self, step: Step, exc: BaseException, acted: bool) -> None:
        """`step` failed; its event ends in error unless the action itself succeeded."""
        if step.event is not None and self.journal.events is not None:
            self.journal.events.finish(self.conn, step.event, None if acted else exc)
        self.record(step.name, "failed", str(exc)[:1000])


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
    return _fold(rows)


def operation(db: Database, operation_uuid: str) -> Interrupted | None:
    """One operation as its journal stands now; None once it has its `end` row."""
    with db.read() as conn:
        # SELECT * FROM operation_steps WHERE operation_uuid = :uuid ORDER BY id
        rows = conn.execute(sa.select(_J).where(_J.c.operation_uuid == operation_uuid)
                            .order_by(_J.c.id)).all()
    if any(row.step == END for row in rows):
        return None
    found = _fold(rows)
    return found[0] if found else None


def step_states(conn: Connection, operation_uuid: str) -> dict[str, str]:
    """step -> its state now, `end` included once the operation ended: what an API that
    waits on part of an operation (live migration before 2.34) reads."""
    # SELECT step, state FROM operation_steps WHERE operation_uuid = :uuid ORDER BY id
    rows = conn.execute(sa.select(_J.c.step, _J.c.state)
                        .where(_J.c.operation_uuid == operation_uuid).order_by(_J.c.id))
    return {row.step: row.state for row in rows}


def _fold(rows: Sequence[Any]) -> list[Interrupted]:
    """Journal rows (ordered by id) -> one Interrupted per operation, in order."""
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


Piece = tuple[str, Step | None]  # ("start" | "done" | "once" | "last", step)


def run_steps(steps: Sequence[Step], journal: Journal,
              last: Callable[[Batch], None] | None = None) -> None:
    """Execute in order; on failure undo the completed ones in reverse and raise StepFailed.

    Journal rows and step records go in as few transactions as the rule
    allows: one before each step that acts (the previous step's `done`, then
    `executing` rows up to the next acting step) and one at the end, which
    also runs `last` (the operation's final records, e.g. `batch.end()`).
    """
    completed: list[Step] = []
    pending: Step | None = None  # acted; its `done` is not journaled yet
    index = 0
    while True:
        pieces: list[Piece] = [("done", pending)] if pending is not None else []
        acting: Step | None = None
        while index < len(steps) and acting is None:
            step = steps[index]
            index += 1
            if step.acts:
                pieces.append(("start", step))
                acting = step
            else:
                pieces.append(("once", step))
        if acting is None and last is not None:
            pieces.append(("last", None))
        _commit(pieces, journal, completed, last)
        if acting is None:
            return
        journal.guard()
        try:
            acting.execute()
        except Exception as exc:
            with journal.batch() as batch:
                batch.failed(acting, exc, acted=False)
            raise StepFailed(acting, exc, undo(completed, journal)) from exc
        pending = acting


def _commit(pieces: Sequence[Piece], journal: Journal, completed: list[Step],
            last: Callable[[Batch], None] | None) -> None:
    """All pieces in one transaction; when that raises, one by one to learn which failed."""
    try:
        with journal.batch() as batch:
            for piece in pieces:
                _apply(batch, piece, last)
    except Exception:  # noqa: BLE001 - replayed below, where the failure is attributed
        LOG.debug("journal batch of %s failed; replaying it piece by piece", journal.uuid)
    else:
        completed.extend(step for kind, step in pieces
                         if kind in ("done", "once") and step is not None)
        return
    for piece in pieces:
        kind, step = piece
        try:
            with journal.batch() as batch:
                _apply(batch, piece, last)
        except Exception as exc:
            if step is None:
                raise
            _failed(step, exc, acted=kind == "done", journal=journal)
            raise StepFailed(step, exc, undo(completed, journal)) from exc
        if kind in ("done", "once") and step is not None:
            completed.append(step)


def _apply(batch: Batch, piece: Piece, last: Callable[[Batch], None] | None) -> None:
    kind, step = piece
    if step is None:
        assert last is not None
        last(batch)
    elif kind == "start":
        batch.start(step)
    elif kind == "once":
        batch.at_once(step)
    else:
        batch.done(step)


def _failed(step: Step, exc: BaseException, acted: bool, journal: Journal) -> None:
    """Journal a failure; a step that acted but could not record it undoes itself first."""
    if acted:
        try:
            step.rollback()
        except Exception:
            LOG.exception("undo of %s, whose outcome could not be recorded, failed", step.name)
    with journal.batch() as batch:
        batch.failed(step, exc, acted)


def undo(completed: Sequence[Step], journal: Journal) -> list[str]:
    """Roll back in reverse; returns the undo failures (logged, recorded, not raised)."""
    errors: list[str] = []
    for step in reversed(completed):
        journal.guard()
        metrics.rolled_back()
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
