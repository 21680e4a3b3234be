"""Steps run in order; a failure undoes the completed ones in reverse, and a failing
undo is recorded without hiding the original error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.conductor.tasks import (
    Journal,
    Step,
    StepFailed,
    accept,
    crash_hook,
    interrupted,
    roll_back,
    run_steps,
)
from stowage.db import Database, schema


def count_writes(db: Database) -> list[int]:
    """Counts the write transactions `db` begins from now on (in a one-item list)."""
    count = [0]
    real = db.write

    @contextmanager
    def write() -> Iterator[Connection]:
        count[0] += 1
        with real() as conn:
            yield conn

    db.write = write  # type: ignore[method-assign]
    return count


def states_of(db: Database) -> dict[str, str]:
    with db.read() as conn:
        rows = conn.execute(sa.select(t.operation_steps.c.step, t.operation_steps.c.state))
        return {row.step: row.state for row in rows}


class Recorder(Step):
    def __init__(self, name: str, log: list[str], fail: bool = False,
                 fail_undo: bool = False, acts: bool = True, fail_before: bool = False,
                 fail_after: bool = False) -> None:
        self.name, self.log, self.fail, self.fail_undo = name, log, fail, fail_undo
        self.acts, self.fail_before, self.fail_after = acts, fail_before, fail_after

    def before(self, conn: Connection) -> None:
        if self.fail_before:
            raise RuntimeError(f"{self.name} cannot start")

    def after(self, conn: Connection) -> None:
        if self.fail_after:
            raise RuntimeError(f"{self.name} cannot record")

    def execute(self) -> None:
        if self.fail:
            raise RuntimeError(f"{self.name} broke")
        self.log.append(f"do {self.name}")

    def rollback(self) -> None:
        if self.fail_undo:
            raise RuntimeError(f"undo {self.name} broke")
        self.log.append(f"undo {self.name}")


@pytest.fixture
def db(tmp_path: object) -> Iterator[Database]:
    database = Database("sqlite://")
    schema.upgrade(database)
    yield database
    database.dispose()


def test_success_runs_every_step(db: Database) -> None:
    log: list[str] = []
    journal = Journal(db, "op", None)
    run_steps([Recorder("a", log), Recorder("b", log)], journal)
    journal.close()
    assert log == ["do a", "do b"]
    assert interrupted(db) == []


def test_failure_undoes_completed_steps_in_reverse(db: Database) -> None:
    log: list[str] = []
    steps = [Recorder("a", log), Recorder("b", log), Recorder("c", log, fail=True)]
    with pytest.raises(StepFailed) as info:
        run_steps(steps, Journal(db, "op", None))
    assert log == ["do a", "do b", "undo b", "undo a"]
    assert info.value.step.name == "c"
    assert info.value.undo_errors == []


def test_failed_undo_is_recorded_not_raised(db: Database) -> None:
    log: list[str] = []
    steps = [Recorder("a", log), Recorder("b", log, fail_undo=True), Recorder("c", log, True)]
    with pytest.raises(StepFailed) as info:
        run_steps(steps, Journal(db, "op", "inst-1"))
    assert str(info.value.cause) == "c broke"
    assert info.value.undo_errors == ["b: undo b broke"]
    assert log == ["do a", "do b", "undo a"]
    [op] = interrupted(db)  # never closed: a restart would see it
    assert (op.operation, op.instance_uuid) == ("op", "inst-1")
    assert op.state("b") == "undo_failed" and op.state("a") == "rolled_back"


def test_an_accepted_operation_is_interrupted_until_it_ends(db: Database) -> None:
    with db.write() as conn:
        uuid = accept(conn, "resize", "inst-1", "req-1", new_flavor={"id": "2"}, host=None)
    [op] = interrupted(db)
    assert (op.operation_uuid, op.operation, op.request_id) == (uuid, "resize", "req-1")
    assert op.args == {"new_flavor": {"id": "2"}, "host": None}
    assert op.state("accepted") == "done" and op.state("create_migration") is None
    journal = Journal(db, "resize", "inst-1", uuid)
    journal.record("create_migration", "executing", json.dumps({"migration_uuid": "m-1"}))
    journal.record("create_migration", "done")  # keeps the detail recorded before
    assert interrupted(db)[0].detail("create_migration") == {"migration_uuid": "m-1"}
    journal.close()
    assert interrupted(db) == []


def test_recovery_undoes_only_what_a_crash_left_behind(db: Database) -> None:
    log: list[str] = []
    steps = [Recorder(name, log) for name in ("a", "b", "c", "d", "e")]
    states = {"a": "rolled_back", "b": "done", "c": "undo_failed", "d": "executing",
              "e": "failed"}
    assert roll_back(steps, states, Journal(db, "op", None)) == []
    assert log == ["undo d", "undo c", "undo b"]


def test_the_crash_hook_matches_one_point() -> None:
    assert crash_hook("") is None
    with pytest.raises(ValueError):
        crash_hook("resize:done")
    hook = crash_hook("resize:prep_resize:done")
    assert hook is not None
    hook("resize", "prep_resize", "executing")  # another point: the process goes on
    hook("migrate", "prep_resize", "done")


def test_journal_rows_share_one_transaction_per_action() -> None:
    """a (no action) | b acts | c acts | end: three transactions, not one per row."""
    database = Database("sqlite://")
    schema.upgrade(database)
    log: list[str] = []
    journal = Journal(database, "op", None, existing=())
    writes = count_writes(database)
    steps = [Recorder("a", log, acts=False), Recorder("b", log), Recorder("c", log)]
    run_steps(steps, journal, last=lambda batch: batch.end())
    assert writes[0] == 3
    assert journal.closed
    journal.close()  # already ended with the last transaction: nothing more
    assert writes[0] == 3
    assert states_of(database) == {"a": "done", "b": "done", "c": "done", "end": "done"}
    database.dispose()


def test_a_step_that_cannot_record_what_it_did_undoes_itself(db: Database) -> None:
    log: list[str] = []
    steps = [Recorder("a", log), Recorder("b", log, fail_after=True), Recorder("c", log)]
    with pytest.raises(StepFailed) as info:
        run_steps(steps, Journal(db, "op", None, existing=()))
    assert info.value.step.name == "b"
    assert log == ["do a", "do b", "undo b", "undo a"]
    assert states_of(db) == {"a": "rolled_back", "b": "failed"}


def test_a_step_that_cannot_start_leaves_the_one_before_it_done_then_undone(
        db: Database) -> None:
    log: list[str] = []
    steps = [Recorder("a", log), Recorder("b", log, fail_before=True)]
    with pytest.raises(StepFailed) as info:
        run_steps(steps, Journal(db, "op", None, existing=()))
    assert (info.value.step.name, str(info.value.cause)) == ("b", "b cannot start")
    assert log == ["do a", "undo a"]
    assert states_of(db) == {"a": "rolled_back", "b": "failed"}
