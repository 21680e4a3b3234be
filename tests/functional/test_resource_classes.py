"""Resource classes over HTTP: standard ones listed, custom ones created, renamed, deleted."""

from __future__ import annotations

import httpx
import os_resource_classes as orc


def test_standard_classes_are_listed(placement: httpx.Client) -> None:
    resp = placement.get("/resource_classes")
    assert resp.status_code == 200
    names = [rc["name"] for rc in resp.json()["resource_classes"]]
    assert names[: len(orc.STANDARDS)] == list(orc.STANDARDS)
    assert resp.headers["cache-control"] == "no-cache"


def test_custom_class_lifecycle(placement: httpx.Client) -> None:
    created = placement.post("/resource_classes", json={"name": "CUSTOM_GOLD"})
    assert created.status_code == 201
    assert created.headers["location"].endswith("/resource_classes/CUSTOM_GOLD")
    again = placement.post("/resource_classes", json={"name": "CUSTOM_GOLD"})
    assert again.status_code == 409
    assert placement.put("/resource_classes/CUSTOM_GOLD").status_code == 204
    assert placement.put("/resource_classes/CUSTOM_SILVER").status_code == 201
    shown = placement.get("/resource_classes/CUSTOM_SILVER")
    assert shown.json()["name"] == "CUSTOM_SILVER"
    assert placement.delete("/resource_classes/CUSTOM_GOLD").status_code == 204
    assert placement.get("/resource_classes/CUSTOM_GOLD").status_code == 404


def test_standard_class_cannot_be_deleted_or_renamed(placement: httpx.Client) -> None:
    resp = placement.delete("/resource_classes/VCPU")
    assert resp.status_code == 400
    old = {"openstack-api-version": "placement 1.6"}
    renamed = placement.put("/resource_classes/VCPU", json={"name": "CUSTOM_X"}, headers=old)
    assert renamed.status_code == 400
    assert placement.get("/resource_classes/VCPU").status_code == 200


def test_bad_names_are_rejected_without_change(placement: httpx.Client) -> None:
    before = placement.get("/resource_classes").json()
    for body in ({"name": "GOLD"}, {"name": "CUSTOM_lower"}, {}, {"name": "CUSTOM_X", "x": 1}):
        resp = placement.post("/resource_classes", json=body)
        assert resp.status_code == 400, body
        assert resp.json()["errors"][0]["code"] == "placement.undefined_code"
    assert placement.get("/resource_classes").json() == before
