"""Helpers for the server tests: flavors, images, boots, waits, and what each consumer holds.

Everything goes through the public APIs (Compute, Image, Placement) except
waiting: `settle()` waits for the control plane's casts to finish, which is
what a user polling `GET /servers/{id}` would eventually see. A host's
agent dying and starting again (`stop_agent`, `start_agent`) and the guests
its hypervisor keeps (`guests`) are the control plane's and the database's,
and so are a deleted server's migrations (`stored_migrations`: the API
hides soft-deleted ones, as Nova does).
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Any

import httpx
import sqlalchemy as sa

from stowage.compute import migrations as compute_migrations
from stowage.compute import tables as compute_tables
from stowage.compute.audit import audit
from stowage.compute.hosts import HostConfig
from stowage.db import Database
from stowage.placement.client import PlacementClient
from stowage.timeutil import utcnow
from tests.functional.conftest import Cloud


def flavor(cloud: Cloud, name: str, vcpus: int, ram: int, disk: int,
           extra_specs: dict[str, str] | None = None) -> str:
    body = {"flavor": {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk}}
    resp = cloud.compute.post("/flavors", json=body)
    assert resp.status_code == 200, resp.text
    flavorid = str(resp.json()["flavor"]["id"])
    if extra_specs:
        resp = cloud.compute.post(f"/flavors/{flavorid}/os-extra_specs",
                                  json={"extra_specs": extra_specs})
        assert resp.status_code == 200, resp.text
    return flavorid


def flavor_id(cloud: Cloud, name: str) -> str:
    """The id of the flavor named `name`."""
    return str(next(f["id"] for f in cloud.compute.get("/flavors").json()["flavors"]
                    if f["name"] == name))


def count_rows(db: Database, table: sa.Table, **where: object) -> int:
    """Rows of `table` in `db`, whichever side it is for (read without a role)."""
    with db.view(None).read() as conn:
        query = sa.select(sa.func.count()).select_from(table)
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        return int(conn.execute(query).scalar_one())


def image(cloud: Cloud, name: str = "cirros", visibility: str | None = None,
          **properties: str) -> str:
    return image_at(cloud.live.url, name, visibility, **properties)


def image_at(base_url: str, name: str = "cirros", visibility: str | None = None,
             **properties: str) -> str:
    """An active image (one byte uploaded) on the stowage served at `base_url`;
    `visibility="public"` lets every project boot it; `properties` are its extra ones."""
    body = {"name": name, "disk_format": "qcow2", "container_format": "bare", **properties}
    if visibility is not None:
        body["visibility"] = visibility
    with httpx.Client(base_url=f"{base_url}/image", timeout=30,
                      headers={"x-auth-token": "admin"}) as client:
        resp = client.post("/v2/images", json=body)
        assert resp.status_code == 201, resp.text
        image_id = str(resp.json()["id"])
        resp = client.put(f"/v2/images/{image_id}/file", content=b"x",
                          headers={"content-type": "application/octet-stream"})
        assert resp.status_code in (204, 201), resp.text
    return image_id


def boot(cloud: Cloud, name: str, flavor_id: str, image_id: str, client: httpx.Client | None = None,
         **extra: Any) -> str:
    """POST /servers and wait until the control plane is done with it; returns its id."""
    body: dict[str, Any] = {"server": {"name": name, "flavorRef": flavor_id,
                                       "imageRef": image_id, "networks": "none"}}
    hints = extra.pop("hints", None)
    body["server"].update(extra)
    if hints:
        body["os:scheduler_hints"] = hints
    resp = (client or cloud.compute).post("/servers", json=body)
    assert resp.status_code == 202, resp.text
    settle(cloud)
    return str(resp.json()["server"]["id"])


def action(cloud: Cloud, server_id: str, body: dict[str, Any], status: int = 202,
           client: httpx.Client | None = None) -> httpx.Response:
    resp = (client or cloud.compute).post(f"/servers/{server_id}/action", json=body)
    assert resp.status_code == status, resp.text
    settle(cloud)
    return resp


def settle(cloud: Cloud) -> None:
    assert cloud.plane.drain(60), "control plane still busy after 60 s"


def server(cloud: Cloud, server_id: str) -> dict[str, Any]:
    resp = cloud.compute.get(f"/servers/{server_id}")
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["server"])


def host_of(cloud: Cloud, server_id: str) -> str:
    return str(server(cloud, server_id)["OS-EXT-SRV-ATTR:host"])


def migrations_of(cloud: Cloud, server_id: str) -> list[dict[str, Any]]:
    resp = cloud.compute.get("/os-migrations", params={"instance_uuid": server_id})
    assert resp.status_code == 200, resp.text
    return list(resp.json()["migrations"])


def stored_migrations(cloud: Cloud, server_id: str) -> list[compute_migrations.Migration]:
    """The server's migration records, newest first, soft-deleted ones too (every cell)."""
    found: list[compute_migrations.Migration] = []
    for db in cloud.live.cell_dbs():
        with db.read() as conn:
            found += compute_migrations.for_instance(conn, server_id)
    return found


def held(cloud: Cloud, consumer: str) -> dict[str, dict[str, int]]:
    """provider uuid -> class -> amount that `consumer` holds."""
    data = cloud.placement.get(f"/allocations/{consumer}").json()["allocations"]
    return {rp: dict(a["resources"]) for rp, a in data.items()}


def usages(cloud: Cloud, rp: str) -> dict[str, int]:
    return dict(cloud.placement.get(f"/resource_providers/{rp}/usages").json()["usages"])


def flavor_amounts(vcpus: int, ram: int, disk: int) -> dict[str, int]:
    return {k: v for k, v in (("VCPU", vcpus), ("MEMORY_MB", ram), ("DISK_GB", disk)) if v}


# What `usages()` says of a provider nobody holds anything on.
EMPTY = {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}


def assert_invariants(cloud: Cloud) -> None:
    client = PlacementClient.over_http(f"{cloud.live.url}/placement")
    try:
        problems = audit(cloud.live.cell_dbs(), client)
    finally:
        client.close()
    assert problems == []


def new_uuid() -> str:
    return str(uuidlib.uuid4())


# --- a host's compute service going down and coming back (evacuate) -----------------------
def force_down(cloud: Cloud, host: str, down: bool = True) -> httpx.Response:
    """PUT /os-services/{id} forced_down (2.53): the service counts as down at once."""
    [service] = [s for s in cloud.compute.get("/os-services").json()["services"]
                 if s["host"] == host and s["binary"] == "nova-compute"]
    return cloud.compute.put(f"/os-services/{service['id']}", json={"forced_down": down})


def stop_agent(cloud: Cloud, host: str) -> HostConfig:
    """The host's agent dies: no more heartbeats, its last one older than service_down_time.

    Returns the host's configuration, for `start_agent` to bring it back.
    """
    config = cloud.plane.agent(host).host
    cloud.plane.stop_host(host)
    long_ago = utcnow() - datetime.timedelta(hours=1)
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(compute_tables.services)
                     .where(compute_tables.services.c.host == host)
                     .values(last_seen_up=long_ago))
    return config


def start_agent(cloud: Cloud, config: HostConfig) -> None:
    """The host's agent starts again (its hypervisor kept its guests): it heartbeats, cleans up."""
    cloud.plane.add_host(config)


def guests(cloud: Cloud, server_id: str) -> dict[tuple[str, str], int]:
    """(host, migration uuid or "") -> power state of what the hypervisors hold of the server."""
    g = compute_tables.simulated_guests
    rows = []
    for db in cloud.live.cell_dbs():  # each host's guests are in its cell's database
        with db.read() as conn:
            rows += conn.execute(sa.select(g.c.host, g.c.migration_uuid, g.c.power_state)
                                 .where(g.c.instance_uuid == server_id)).all()
    return {(r.host, r.migration_uuid): r.power_state for r in rows}
