"""The late group check with a cell database of its own (server_groups.late_check).

    API database   server_groups (the row locked), server_group_members
    cell database  instances a and b, both members of one anti-affinity group

Two agents claim host h1 for a and b at the same moment. Agent A checks and
writes a's host, then waits a moment before its cell transaction commits
(as a loaded database would); agent B checks b meanwhile. The group's row
lock must last until a's host is committed, so that B waits and then sees a
on h1 -- with the lock ending with its own API transaction, B checked while
a's host was not yet visible and both landed on h1. SQLite serialises the
two cell transactions anyway, so PostgreSQL and MySQL only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from stowage.compute import instances, server_groups, states
from stowage.compute.server_groups import PolicyViolated
from stowage.db import Database, schema
from stowage.db.engine import API, CELL
from tests.conftest import BACKENDS
from tests.dbs import migrated_database


@pytest.fixture(params=[b for b in BACKENDS if b != "sqlite"])
def two_databases(request: pytest.FixtureRequest) -> Iterator[tuple[Database, Database]]:
    with migrated_database(request.param) as api_url, \
            migrated_database(request.param) as cell_url:
        api, cell = Database(api_url), Database(cell_url)
        schema.upgrade(api)
        schema.upgrade(cell)
        try:
            yield api.view(API), cell.view(CELL)
        finally:
            api.dispose()
            cell.dispose()


def _members(api: Database, cell: Database) -> tuple[str, str]:
    with api.write() as conn:
        group = server_groups.create(conn, "g", "anti-affinity", "p", "u")
    uuids = []
    for name in ("a", "b"):
        with cell.write() as conn:
            made = instances.create(conn, instances.Instance(
                uuid=f"00000000-0000-0000-0000-00000000000{len(uuids)}", project_id="p",
                user_id="u", display_name=name, flavor={}, vm_state=states.BUILDING,
                task_state=states.TASK.SPAWNING))
        with api.write() as conn:
            server_groups.add_member(conn, group.uuid, made.uuid)
        uuids.append(made.uuid)
    return uuids[0], uuids[1]


def _claim(api: Database, cell: Database, uuid: str, checked: threading.Event,
           hold: threading.Event | None) -> None:
    """An agent's `_claim_host`: the late check, the host, and (A) a slow commit."""
    with server_groups.late_check(api) as check, cell.write() as conn:
        check(conn, uuid, "h1")
        checked.set()
        instances.save(conn, uuid, host="h1")
        if hold is not None:
            hold.wait(1)  # B checks meanwhile, unless the group's lock makes it wait


def test_two_members_checked_at_once_do_not_share_a_host(
        two_databases: tuple[Database, Database]) -> None:
    api, cell = two_databases
    a, b = _members(api, cell)
    a_checked, b_checked = threading.Event(), threading.Event()
    refused: list[BaseException] = []

    def agent_b() -> None:
        a_checked.wait(10)
        try:
            _claim(api, cell, b, b_checked, None)
        except PolicyViolated as exc:
            refused.append(exc)

    thread = threading.Thread(target=agent_b)
    thread.start()
    _claim(api, cell, a, a_checked, b_checked)
    thread.join(30)

    assert not b_checked.is_set()  # B's check waited for a's host to be committed
    assert [str(e) for e in refused] == [server_groups.ANTI_AFFINITY_VIOLATED]
    with cell.read() as conn:
        hosts = {i.uuid: i.host for i in instances.list_instances(conn, uuids=[a, b])}
    assert hosts == {a: "h1", b: None}
