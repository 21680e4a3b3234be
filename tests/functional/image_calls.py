"""Image API calls the image test modules share: create a record, show one."""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["create", "show"]


def create(client: httpx.Client, name: str = "img", **fields: Any) -> dict[str, Any]:
    """A new (queued) raw/bare image; any field overrides."""
    body = {"name": name, "disk_format": "raw", "container_format": "bare", **fields}
    resp = client.post("/v2/images", json=body)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def show(client: httpx.Client, image_id: str) -> dict[str, Any]:
    resp = client.get(f"/v2/images/{image_id}")
    assert resp.status_code == 200, resp.text
    return dict(resp.json())
