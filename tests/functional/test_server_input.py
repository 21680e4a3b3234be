"""Hostile and careless input to the server API: answered at once, with Nova's 4xx, writing nothing.

Issue 8's reproductions, over HTTP on every backend:

- regular-expression list filters (`name`, `reservation_id`, and the admin's
  `description`, `hostname`, `node`, ...) run on a linear-time engine: the
  catastrophic `(a+)+$` over `aaaa…a!` answers with the right servers, and a
  pattern that cannot compile (5000 `(`, a backreference) is a 400;
- `max_count` is bounded per request before anything is written, however
  large, while a multi-create within the bound still builds every server
  (written a few instances per transaction);
- at 2.74 `hypervisor_hostname` alone pins the build to that node;
- values Nova's schema, format checker and quotas refuse (accessIPv4/v6,
  user_data, same_host/different_host hints, key_name, metadata items) are
  refused the same way.

The cloud::

    host1 (64 VCPU, 128 GiB)     host2 (16 VCPU, 32 GiB)     host3 (16 VCPU, 32 GiB)

The spread weigher prefers host1, the emptiest, unless a request names another.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute import actions
from stowage.compute import tables as t
from stowage.compute.api import server_create
from stowage.placement import tables as pt
from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import boot, flavor, host_of, image, server, settle

CATASTROPHIC = "(a+)+$"
UUID = "0f5c5a0e-43f0-4bb4-9d1e-2ba1c1b35a11"


@pytest.fixture
def world(cloud: Cloud) -> dict[str, str]:
    """Three hosts, a small public flavor and a public image everybody may boot."""
    cloud.add_host("host1", vcpus=64, memory_mb=131072)
    cloud.add_host("host2")
    cloud.add_host("host3")
    return {"flavor": flavor(cloud, "small", 1, 512, 1),
            "image": image(cloud, visibility="public")}


def member(cloud: Cloud, project: str = "p1") -> httpx.Client:
    return cloud.client(f"u-{project}:{project}", roles=MEMBER)


def body(world: dict[str, str], **server: Any) -> dict[str, Any]:
    hints = server.pop("hints", None)
    made: dict[str, Any] = {"server": {"name": "vm", "flavorRef": world["flavor"],
                                       "imageRef": world["image"], "networks": "none",
                                       **server}}
    if hints is not None:
        made["os:scheduler_hints"] = hints
    return made


def written(cloud: Cloud) -> dict[str, int]:
    """Rows a create writes: instances (deleted or not), specs, actions, memberships, claims."""
    tables = {"instances": t.instances, "request_specs": t.request_specs,
              "instance_actions": t.instance_actions,
              "server_group_members": t.server_group_members,
              "allocations": pt.allocations}
    def count(table: sa.Table) -> int:
        db = cloud.live.cell_db if table.name in t.CELL_TABLES else cloud.live.db
        with db.view(None).read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0)
    return {name: count(table) for name, table in tables.items()}


def refused(cloud: Cloud, client: httpx.Client, payload: dict[str, Any], status: int,
            message: str) -> None:
    """POST /servers answers `status` with `message`, and nothing was written."""
    before = written(cloud)
    resp = client.post("/servers", json=payload)
    assert resp.status_code == status, resp.text
    assert message in resp.text, resp.text
    settle(cloud)
    assert written(cloud) == before


def names(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return sorted(s["name"] for s in resp.json()["servers"])


# --- 1. regular-expression filters ---------------------------------------------------
def test_catastrophic_name_pattern_answers_with_the_right_servers(
        cloud: Cloud, world: dict[str, str]) -> None:
    owner = member(cloud)
    # 26 is the reproduction (8.9 s with a backtracking engine); each
    # further character doubles that, so 34 would take over half an hour.
    for name in ("a" * 26 + "!", "a" * 34 + "!", "aaa", "baa"):
        boot(cloud, name, world["flavor"], world["image"], client=owner)
    found = owner.get("/servers", params={"name": CATASTROPHIC})
    assert names(found) == ["aaa", "baa"]
    assert names(owner.get("/servers/detail", params={"name": "^(a|aa)+$"})) == ["aaa"]


def test_catastrophic_patterns_in_every_regex_filter(cloud: Cloud, world: dict[str, str]) -> None:
    """The admin's regex filters (hostname, description, node, zone, key_name) too."""
    owner = member(cloud)
    boot(cloud, "a" * 30 + "!", world["flavor"], world["image"], client=owner,
         description="a" * 30 + "!")
    boot(cloud, "aaa", world["flavor"], world["image"], client=owner, description="aaa")
    admin = {"all_tenants": "1"}
    assert names(cloud.compute.get("/servers", params={**admin, "description": CATASTROPHIC})
                 ) == ["aaa"]
    # Hostnames drop the "!": both end in a's.
    assert names(cloud.compute.get("/servers", params={**admin, "hostname": CATASTROPHIC})
                 ) == sorted(["a" * 30 + "!", "aaa"])
    for name in ("node", "availability_zone", "key_name", "display_name"):
        assert names(cloud.compute.get("/servers", params={**admin, name: "(x+x+)+y"})) == []
    reservation = cloud.compute.get("/servers/detail", params=admin).json()["servers"][0][
        "OS-EXT-SRV-ATTR:reservation_id"]
    assert len(names(owner.get("/servers", params={"reservation_id": f"^({reservation})+$"}))
               ) == 1


@pytest.mark.parametrize("pattern", [
    "(" * 5000,          # the RecursionError: over the length cap
    "(" * 200,           # under the cap, unbalanced
    "(a)\\1",            # a backreference: not linear-time, RE2 refuses it
    "(?=a)a",            # lookahead, likewise
    "x{1001}",           # a repetition RE2 will not expand
], ids=["5000_parens", "200_parens", "backreference", "lookahead", "repetition"])
@pytest.mark.parametrize("param", ["name", "reservation_id"])
def test_invalid_pattern_is_a_400(cloud: Cloud, world: dict[str, str], pattern: str,
                                  param: str) -> None:
    owner = member(cloud)
    boot(cloud, "vm", world["flavor"], world["image"], client=owner)
    resp = owner.get("/servers", params={param: pattern})
    assert resp.status_code == 400, resp.text
    assert "Invalid regular expression" in resp.json()["badRequest"]["message"]
    # The admin's filters answer the same way.
    resp = cloud.compute.get("/servers/detail", params={"all_tenants": "1", "hostname": pattern})
    assert resp.status_code == 400, resp.text


# --- 2. how many servers one request may create --------------------------------------
@pytest.mark.parametrize("counts", [
    {"max_count": 9223372036854775808},
    {"max_count": "9" * 5000},
    {"min_count": 11},
    {"min_count": 1, "max_count": 11},
], ids=["max_count_2_pow_63", "max_count_5000_digits", "min_count_11", "max_count_11"])
def test_too_many_servers_in_one_request_writes_nothing(
        cloud: Cloud, world: dict[str, str], counts: dict[str, Any]) -> None:
    refused(cloud, member(cloud), body(world, **counts), 403,
            "Quota exceeded for instances: Requested ")


@pytest.mark.parametrize("counts, message", [
    ({"min_count": "0"}, "0 is less than the minimum of 1"),
    ({"min_count": 1, "max_count": "0"}, "0 is less than the minimum of 1"),
    ({"min_count": 3, "max_count": 2}, "min_count must be <= max_count"),
], ids=["min_count_0", "max_count_0", "crossed"])
def test_counts_below_one_or_crossed_are_a_400(cloud: Cloud, world: dict[str, str],
                                              counts: dict[str, Any], message: str) -> None:
    refused(cloud, member(cloud), body(world, **counts), 400, message)


def test_multi_create_up_to_the_limit_builds_every_server_in_batches(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_create, "_BATCH", 3)  # 10 servers: 4 transactions
    resp = member(cloud).post("/servers", json=body(world, min_count=2, max_count=10,
                                                     return_reservation_id=True))
    assert resp.status_code == 202, resp.text
    settle(cloud)
    found = cloud.compute.get("/servers/detail", params={"all_tenants": "1"}).json()["servers"]
    assert sorted(s["name"] for s in found) == sorted(f"vm-{i}" for i in range(1, 11))
    assert {s["OS-EXT-SRV-ATTR:reservation_id"] for s in found} == {
        resp.json()["reservation_id"]}
    assert sorted(s["OS-EXT-SRV-ATTR:launch_index"] for s in found) == list(range(10))
    assert {s["status"] for s in found} == {"ACTIVE"}
    assert written(cloud)["allocations"] == 10 * 3  # VCPU, MEMORY_MB, DISK_GB each


def test_a_failed_later_batch_deletes_the_earlier_ones(
        cloud: Cloud, world: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_create, "_BATCH", 3)
    real = actions.start_action
    calls = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) == 8:  # in the third batch
            raise RuntimeError("database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(actions, "start_action", failing)
    resp = member(cloud).post("/servers", json=body(world, max_count=10))
    assert resp.status_code == 500, resp.text
    settle(cloud)
    assert member(cloud).get("/servers").json()["servers"] == []
    counts = written(cloud)
    assert (counts["request_specs"], counts["allocations"]) == (0, 0)
    with cloud.live.cell_db.read() as conn:
        states = conn.execute(sa.select(t.instances.c.vm_state, t.instances.c.deleted)).all()
    assert len(states) == 6 and all(s.vm_state == "deleted" and s.deleted for s in states)


# --- 12. 2.74 requested destination --------------------------------------------------
def test_hypervisor_hostname_alone_is_honoured(cloud: Cloud, world: dict[str, str]) -> None:
    v274 = cloud.client("admin", version="2.74")
    chosen = boot(cloud, "free", world["flavor"], world["image"], client=v274)
    assert host_of(cloud, chosen) == "host1"  # what the weigher picks by itself
    pinned = boot(cloud, "pinned", world["flavor"], world["image"], client=v274,
                  hypervisor_hostname="host3")
    shown = server(cloud, pinned)
    assert shown["status"] == "ACTIVE"
    assert (shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-SRV-ATTR:hypervisor_hostname"]) == (
        "host3", "host3")


@pytest.mark.parametrize("destination, message", [
    ({"hypervisor_hostname": "nowhere"}, "Compute host nowhere could not be found."),
    ({"host": "host1", "hypervisor_hostname": "host2"},
     "Compute host host1 could not be found."),
    ({"host": "nowhere"}, "Compute host nowhere could not be found."),
], ids=["unknown_node", "node_of_another_host", "unknown_host"])
def test_unknown_requested_destination_is_a_400(cloud: Cloud, world: dict[str, str],
                                                destination: dict[str, str],
                                                message: str) -> None:
    refused(cloud, cloud.client("admin", version="2.74"), body(world, **destination), 400,
            message)


def test_requested_destination_is_for_admins(cloud: Cloud, world: dict[str, str]) -> None:
    refused(cloud, cloud.client("u-p1:p1", version="2.74", roles=MEMBER),
            body(world, hypervisor_hostname="host3"), 403,
            "compute:servers:create:requested_destination")


# --- 14. values Nova's schema, format checker and quotas refuse ---------------------
@pytest.mark.parametrize("server, status, message", [
    ({"accessIPv4": "999.0.0.1"}, 400,
     "Invalid input for field/attribute accessIPv4. Value: 999.0.0.1. "
     "'999.0.0.1' is not a 'ipv4'"),
    ({"accessIPv4": "::1"}, 400, "'::1' is not a 'ipv4'"),
    ({"accessIPv6": "10.0.0.1"}, 400, "'10.0.0.1' is not a 'ipv6'"),
    ({"accessIPv6": "fe80::1%eth0"}, 400, "is not a 'ipv6'"),
    ({"user_data": "not base64!"}, 400,
     "Invalid input for field/attribute user_data. Value: not base64!. "
     "'not base64!' is not a 'base64'"),
    ({"networks": [{"uuid": UUID, "fixed_ip": "10.0.0.300"}]}, 400,
     "networks/0/fixed_ip"),
    ({"hints": {"same_host": ["not-a-uuid"]}}, 400, "os:scheduler_hints/same_host/0"),
    ({"hints": {"different_host": "not-a-uuid"}}, 400,
     "is not valid under any of the given schemas"),
    ({"hints": {"different_host": [UUID, "not-a-uuid"]}}, 400,
     "is not valid under any of the given schemas"),
    ({"hints": {"build_near_host_ip": "near"}}, 400, "build_near_host_ip"),
    ({"hints": {"query": 5}}, 400, "os:scheduler_hints/query"),
    ({"key_name": "mykey"}, 400, "Invalid key_name provided."),
    ({"metadata": {f"k{i}": "v" for i in range(1000)}}, 403,
     "Maximum number of metadata items exceeds 128"),
    ({"metadata": {f"k{i}": "v" for i in range(129)}}, 403,
     "Maximum number of metadata items exceeds 128"),
], ids=["accessIPv4_999", "accessIPv4_v6", "accessIPv6_v4", "accessIPv6_zone",
        "user_data", "fixed_ip", "same_host_list", "different_host", "different_host_list",
        "build_near_host_ip", "query_hint", "key_name", "metadata_1000", "metadata_129"])
def test_bad_values_are_refused_and_write_nothing(cloud: Cloud, world: dict[str, str],
                                                  server: dict[str, Any], status: int,
                                                  message: str) -> None:
    refused(cloud, member(cloud), body(world, **server), status, message)


def test_good_values_are_accepted(cloud: Cloud, world: dict[str, str]) -> None:
    """The valid forms of each value above, and Nova's leniency for a lone same_host string."""
    owner = member(cloud)
    metadata = {f"k{i}": "v" for i in range(128)}
    vm = boot(cloud, "vm", world["flavor"], world["image"], client=owner,
              accessIPv4="10.0.0.1", accessIPv6="2001:db8::1", user_data="aGVsbG8=",
              metadata=metadata,
              hints={"same_host": "anything", "different_host": [UUID],
                     "query": '[">=", "$free_ram_mb", 1024]', "build_near_host_ip": "10.0.0.1"})
    shown = server(cloud, vm)
    assert shown["status"] == "ACTIVE" and shown["metadata"] == metadata
