"""Helpers for the server data tests (key pairs, metadata, tags, create-time checks).

A "stored" server is an instance record written straight into the database
as the conductor leaves a built one (ACTIVE on host1), so that the tests
exercise the API alone and stay fast; the create tests boot through
POST /servers with a recording conductor instead.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import httpx

from stowage.compute import flavors as flv
from stowage.compute import instances as inst
from stowage.compute import states
from stowage.timeutil import utcnow
from tests.functional.conftest import MEMBER, READER, Cloud

__all__ = ["at", "stored_server", "instance", "member", "reader", "FLAVOR"]

FLAVOR = "sd1"


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


def _flavor(cloud: Cloud) -> dict[str, Any]:
    resp = cloud.compute.get(f"/flavors/{FLAVOR}")
    if resp.status_code == 404:
        resp = cloud.compute.post("/flavors", json={"flavor": {
            "name": "sd.small", "id": FLAVOR, "vcpus": 1, "ram": 512, "disk": 1}})
        assert resp.status_code == 200, resp.text
    with cloud.live.db.read() as conn:
        return flv.snapshot(flv.get(conn, FLAVOR))


def stored_server(cloud: Cloud, project: str = "p1", user: str = "demo",
                  **fields: Any) -> str:
    """An ACTIVE server of `project`/`user` on host1, written as the conductor leaves it."""
    values: dict[str, Any] = {
        "uuid": str(uuidlib.uuid4()), "project_id": project, "user_id": user,
        "display_name": "vm", "flavor": _flavor(cloud), "vm_state": states.ACTIVE,
        "power_state": states.RUNNING, "host": "host1", "node": "host1", "hostname": "vm",
        "reservation_id": "r-abcdefgh", "launched_at": utcnow(),
        "image_ref": str(uuidlib.uuid4())}
    values.update(fields)
    with cloud.live.cell_db.write() as conn:
        return inst.create(conn, inst.Instance(**values)).uuid


def instance(cloud: Cloud, uuid: str) -> inst.Instance:
    with cloud.live.cell_db.read() as conn:
        return inst.get(conn, uuid, read_deleted=True)


def member(cloud: Cloud, who: str = "demo:p1", version: str = "latest") -> httpx.Client:
    return cloud.client(who, version=version, roles=MEMBER)


def reader(cloud: Cloud, who: str = "demo:p1", version: str = "latest") -> httpx.Client:
    return cloud.client(who, version=version, roles=READER)
