"""/servers/{id}/metadata over HTTP: Nova's six calls, their limits, states and races."""

from __future__ import annotations

import concurrent.futures

from stowage.compute import instances as inst
from stowage.compute import states
from tests.functional.conftest import Cloud
from tests.functional.serverdata import instance, member, reader, stored_server


def test_read_merge_replace_and_items(cloud: Cloud) -> None:
    server = stored_server(cloud, metadata={"a": "1"})
    path = f"/servers/{server}/metadata"
    with member(cloud) as alice:
        assert alice.get(path).json() == {"metadata": {"a": "1"}}
        merged = alice.post(path, json={"metadata": {"b": "2", "a": "x"}})
        assert (merged.status_code, merged.json()) == (200, {"metadata": {"a": "x", "b": "2"}})
        replaced = alice.put(path, json={"metadata": {"c": "3"}})
        assert (replaced.status_code, replaced.json()) == (200, {"metadata": {"c": "3"}})
        assert alice.get(path + "/c").json() == {"meta": {"c": "3"}}
        one = alice.put(path + "/d", json={"meta": {"d": "4"}})
        assert (one.status_code, one.json()) == (200, {"meta": {"d": "4"}})
        assert alice.delete(path + "/c").status_code == 204
        for missing in (alice.get(path + "/c"), alice.delete(path + "/c")):
            assert (missing.status_code, missing.json()["itemNotFound"]["message"]) == \
                (404, "Metadata item was not found")
        assert alice.get(f"/servers/{server}").json()["server"]["metadata"] == {"d": "4"}
    assert instance(cloud, server).metadata == {"d": "4"}


def test_bad_requests_change_nothing(cloud: Cloud) -> None:
    server = stored_server(cloud, metadata={"a": "1"})
    path = f"/servers/{server}/metadata"
    with member(cloud) as alice:
        mismatch = alice.put(path + "/x", json={"meta": {"y": "1"}})
        assert (mismatch.status_code, mismatch.json()["badRequest"]["message"]) == \
            (400, "Request body and URI mismatch")
        for body in ({"meta": {"x": "1", "y": "2"}}, {"meta": {}}, {"meta": {"x": 1}}):
            assert alice.put(path + "/x", json=body).status_code == 400, body
        for body in ({"metadata": {"k" * 256: "v"}}, {"metadata": {"k": "v" * 256}},
                     {"metadata": {"bad/key": "v"}}, {"metadata": ["a"]}, {"meta": {"a": "b"}}):
            assert alice.post(path, json=body).status_code == 400, body
        too_many = alice.post(path, json={"metadata": {f"k{i}": "v" for i in range(128)}})
        assert (too_many.status_code, too_many.json()["forbidden"]["message"]) == \
            (403, "Maximum number of metadata items exceeds 128")
        assert alice.put(path, json={"metadata": {f"k{i}": "v" for i in range(128)}}
                         ).status_code == 200
        assert alice.put(path + "/one-more", json={"meta": {"one-more": "v"}}).status_code == 403
    assert len(instance(cloud, server).metadata) == 128


def test_policy_project_and_state(cloud: Cloud) -> None:
    server = stored_server(cloud, metadata={"a": "1"})
    path = f"/servers/{server}/metadata"
    with reader(cloud) as bob:
        assert bob.get(path + "/a").status_code == 200
        assert bob.post(path, json={"metadata": {"b": "2"}}).status_code == 403
    with member(cloud, "eve:p2") as eve:
        assert eve.get(path).status_code == 404
        assert eve.delete(path + "/a").status_code == 404
    with cloud.live.cell_db.write() as conn:  # a running task does not matter, the vm_state does
        inst.update(conn, server, task_state="resize_prep")
    with member(cloud) as alice:
        assert alice.put(path + "/a", json={"meta": {"a": "2"}}).status_code == 200
    with cloud.live.cell_db.write() as conn:
        inst.update(conn, server, vm_state=states.ERROR)
    with member(cloud) as alice:
        broken = alice.put(path + "/a", json={"meta": {"a": "3"}})
        assert (broken.status_code, broken.json()["conflictingRequest"]["message"]) == \
            (409, f"Cannot 'update metadata' instance {server} while it is in vm_state error")
        assert alice.get(path).status_code == 200  # reading is always allowed
    shelved = stored_server(cloud, vm_state=states.SHELVED_OFFLOADED)
    with member(cloud) as alice:
        refused = alice.delete(f"/servers/{shelved}/metadata/a")
        assert refused.status_code == 409
        assert "Cannot 'delete metadata'" in refused.json()["conflictingRequest"]["message"]
    locked = stored_server(cloud, locked=True)
    with member(cloud) as alice:
        assert alice.post(f"/servers/{locked}/metadata",
                          json={"metadata": {"a": "1"}}).status_code == 409
    assert cloud.compute.post(f"/servers/{locked}/metadata",
                              json={"metadata": {"a": "1"}}).status_code == 200
    assert instance(cloud, server).metadata == {"a": "2"}


def test_concurrent_merges_all_land(cloud: Cloud) -> None:
    server = stored_server(cloud)

    def merge(n: int) -> int:
        with member(cloud) as client:
            return client.post(f"/servers/{server}/metadata",
                               json={"metadata": {f"k{n}": str(n)}}).status_code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert set(pool.map(merge, range(12))) == {200}
    assert instance(cloud, server).metadata == {f"k{n}": str(n) for n in range(12)}
