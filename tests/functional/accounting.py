"""Helpers for the accounting tests: build providers and write allocations over HTTP.

Kept apart from conftest so the tests read as the calls a client would make.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import httpx

PROJECT = "6f4c5a2e-project"
USER = "a1b2c3d4-user"


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def provider(client: httpx.Client, name: str, inventories: dict[str, dict[str, Any]],
             parent: str | None = None) -> str:
    """Create a provider with the given inventories; returns its uuid."""
    rp_uuid = new_uuid()
    body: dict[str, Any] = {"name": name, "uuid": rp_uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert client.post("/resource_providers", json=body).status_code == 200
    if inventories:
        resp = client.put(f"/resource_providers/{rp_uuid}/inventories",
                          json={"resource_provider_generation": 0, "inventories": inventories})
        assert resp.status_code == 200, resp.text
    return rp_uuid


def generation(client: httpx.Client, rp_uuid: str) -> int:
    return int(client.get(f"/resource_providers/{rp_uuid}").json()["generation"])


def body(allocations: dict[str, dict[str, int]], consumer_generation: int | None = None,
         project: str = PROJECT, user: str = USER, consumer_type: str = "INSTANCE",
         ) -> dict[str, Any]:
    """A latest-microversion consumer body: provider uuid -> class -> amount."""
    return {"allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": project, "user_id": user,
            "consumer_generation": consumer_generation, "consumer_type": consumer_type}


def put(client: httpx.Client, consumer: str, allocations: dict[str, dict[str, int]],
        consumer_generation: int | None = None, **kw: Any) -> httpx.Response:
    return client.put(f"/allocations/{consumer}",
                      json=body(allocations, consumer_generation, **kw))


def held(client: httpx.Client, consumer: str) -> dict[str, dict[str, int]]:
    """What the consumer holds: provider uuid -> class -> amount."""
    data = client.get(f"/allocations/{consumer}").json()["allocations"]
    return {rp: entry["resources"] for rp, entry in data.items()}


def consumer_generation(client: httpx.Client, consumer: str) -> int | None:
    value = client.get(f"/allocations/{consumer}").json().get("consumer_generation")
    return None if value is None else int(value)


def usages(client: httpx.Client, rp_uuid: str) -> dict[str, int]:
    return dict(client.get(f"/resource_providers/{rp_uuid}/usages").json()["usages"])


def error(resp: httpx.Response) -> tuple[int, str, str]:
    err = resp.json()["errors"][0]
    return resp.status_code, err.get("code", ""), err["detail"]
