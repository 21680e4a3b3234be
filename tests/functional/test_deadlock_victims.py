"""A conductor transaction chosen as a deadlock victim: the operation still ends now.

PostgreSQL and MySQL roll one of two waiting transactions back as a deadlock
victim (CI saw MySQL pick the delete's journal write while a resize of the
same server ran). The victim's changes are gone, as after a crash right
before it, and the lease is still this conductor's, so the conductor runs
the operation's recovery code at once instead of leaving the server in its
task state until the lease expires. The victim is made here by raising the
error MySQL raises (1213) from the lease confirmation, the last statement
of every journal transaction, so the whole transaction rolls back as it
would on the server.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest
import sqlalchemy as sa

from stowage.compute.conductor import tasks
from stowage.compute.conductor.leases import Leases
from tests.functional import servers as sv
from tests.functional.conftest import Cloud
from tests.functional.test_delete_during_move import assert_nothing_left, booted

__all__ = ["booted"]  # the fixture: the server on h1, h2 empty

DEADLOCK = pymysql.err.OperationalError(
    1213, "Deadlock found when trying to get lock; try restarting transaction")


class Victim:
    """Makes the `nth` lease confirmation of operations named `operation` a deadlock victim."""

    def __init__(self, cloud: Cloud, operation: str, nth: int) -> None:
        self.cloud, self.operation, self.left = cloud, operation, nth
        self.struck: str | None = None

    def confirm_in(self, real: Any) -> Any:
        def confirm(leases: Leases, conn: Any, uuid: str, ending: bool) -> None:
            if self.struck is None and self._named(uuid):
                self.left -= 1
                if self.left == 0:
                    self.struck = uuid
                    raise sa.exc.OperationalError("UPDATE operation_steps ...", {}, DEADLOCK)
            real(leases, conn, uuid, ending)
        return confirm

    def _named(self, uuid: str) -> bool:
        op = tasks.operation(self.cloud.live.cell_db, uuid)
        return op is not None and op.operation == self.operation


@pytest.fixture
def victim(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> Any:
    def arm(operation: str, nth: int = 1) -> Victim:
        made = Victim(cloud, operation, nth)
        monkeypatch.setattr(Leases, "confirm_in", made.confirm_in(Leases.confirm_in))
        return made
    return arm


def operation_ended(cloud: Cloud, uuid: str | None) -> bool:
    assert uuid is not None, "the deadlock was never injected"
    return tasks.operation(cloud.live.cell_db, uuid) is None


def test_a_delete_that_loses_a_deadlock_is_done_at_once(
        cloud: Cloud, booted: dict[str, Any], victim: Any) -> None:
    struck = victim("delete")
    server = booted["server"]
    assert cloud.compute.delete(f"/servers/{server}").status_code == 204
    sv.settle(cloud)
    assert operation_ended(cloud, struck.struck)
    assert_nothing_left(cloud, server)


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_resize_that_loses_a_deadlock_ends_settled(
        cloud: Cloud, booted: dict[str, Any], victim: Any, nth: int) -> None:
    """Wherever the victim falls, the resize is finished or rolled back: its steps'
    own rollback catches a victim inside them, `_resume` one between them."""
    struck = victim("resize", nth)
    server = booted["server"]
    sv.action(cloud, server, {"resize": {"flavorRef": booted["big"]}})
    assert operation_ended(cloud, struck.struck)
    shown = sv.server(cloud, server)
    assert shown["OS-EXT-STS:task_state"] is None
    assert shown["status"] in {"VERIFY_RESIZE", "ACTIVE"}, shown["status"]
    sv.assert_invariants(cloud)
