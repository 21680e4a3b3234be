"""A varied Placement world, built through the API (upstream's, for the adoption tests),
and the reads that compare two Placement services holding it.

::

    aggregate A ┬──────────────┬──────────────────┐       aggregate B ┬─────┐
                cn1 (GOLD,AVX2) cn2               ss1 sharing DISK_GB  cn2   cn3..cn12
                ├── numa0 (NUMA_ROOT)             (MISC_SHARES_VIA_AGGREGATE)
                │    └── pf0 CUSTOM_VF (PHYSNET_A)
                └── numa1
    rack (created last) └── cn11 (re-parented at 1.37)
    aggregate C: cn5, cn6          traits CUSTOM_GOLD, CUSTOM_PHYSNET_A
    classes CUSTOM_VF, CUSTOM_LICENSE (on cn4)

    inst-1  INSTANCE  cn1 VCPU/MEMORY_MB + ss1 DISK_GB      project p1 / user u1
    inst-2  INSTANCE  numa0 VCPU + pf0 CUSTOM_VF            project p1 / user u2
    mig-1   MIGRATION cn2 (the source host's allocation)    project p2 / user u1
    inst-3  INSTANCE  cn3 (the migrating instance's new)    project p2 / user u1
    bak-1   BACKUP    cn4 CUSTOM_LICENSE                    project p3 / user u3
    old-1   (no type, written at 1.28)  cn5                 project p3 / user u3
    empty-1 INSTANCE  written with no allocations (upstream keeps it, generation 0)

Generations above 0 everywhere (inventories set twice, a provider renamed, a
consumer's allocations rewritten).
"""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import httpx

__all__ = ["U", "World", "build_world", "reads", "normalised", "write_more"]

U = {name: str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"adopt-{name}")) for name in (
    "cn1", "numa0", "numa1", "pf0", "cn2", "ss1", *[f"cn{i}" for i in range(3, 13)],
    "rack", "aggA", "aggB", "aggC", "inst-1", "inst-2", "mig-1", "inst-3", "bak-1", "old-1",
    "empty-1", "late", "late-agg", "late-1", "late-p", "late-u",
    "p1", "p2", "p3", "u1", "u2", "u3")}
World = dict[str, str]


def _call(client: httpx.Client, method: str, path: str, body: Any = None,
          version: str = "latest") -> Any:
    resp = client.request(method, path, json=body,
                          headers={"openstack-api-version": f"placement {version}"})
    assert resp.status_code < 300, f"{method} {path}: {resp.status_code} {resp.text}"
    return resp.json() if resp.content else None


def _provider(client: httpx.Client, name: str, parent: str | None = None) -> None:
    body = {"name": name, "uuid": U[name]}
    if parent:
        body["parent_provider_uuid"] = U[parent]
    _call(client, "POST", "/resource_providers", body)


def _inventory(client: httpx.Client, name: str, inventories: dict[str, dict[str, Any]]) -> None:
    path = f"/resource_providers/{U[name]}/inventories"
    generation = _call(client, "GET", path)["resource_provider_generation"]
    _call(client, "PUT", path, {"resource_provider_generation": generation,
                                "inventories": inventories})


def _link(client: httpx.Client, name: str, what: str, values: list[str]) -> None:
    path = f"/resource_providers/{U[name]}/{what}"
    generation = _call(client, "GET", path)["resource_provider_generation"]
    _call(client, "PUT", path, {"resource_provider_generation": generation, what: values})


def _providers(client: httpx.Client) -> None:
    for name in ("cn1", "cn2", "ss1", *[f"cn{i}" for i in range(3, 13)]):
        _provider(client, name)
    _provider(client, "numa0", "cn1")
    _provider(client, "numa1", "cn1")
    _provider(client, "pf0", "numa0")
    _call(client, "PUT", f"/resource_providers/{U['cn12']}", {"name": "cn12-renamed"})
    # Re-parented (1.37) under a provider created after it: a parent with a higher id.
    _provider(client, "rack")
    _call(client, "PUT", f"/resource_providers/{U['cn11']}",
          {"name": "cn11", "parent_provider_uuid": U["rack"]})
    for rc in ("CUSTOM_VF", "CUSTOM_LICENSE"):
        _call(client, "PUT", f"/resource_classes/{rc}")
    for trait in ("CUSTOM_GOLD", "CUSTOM_PHYSNET_A"):
        _call(client, "PUT", f"/traits/{trait}")


def _inventories(client: httpx.Client) -> None:
    _inventory(client, "cn1", {"MEMORY_MB": {"total": 32768, "reserved": 512,
                                             "allocation_ratio": 1.5, "max_unit": 16384}})
    _inventory(client, "numa0", {"VCPU": {"total": 8, "reserved": 1, "allocation_ratio": 4.0},
                                 "MEMORY_MB": {"total": 16384, "step_size": 256}})
    _inventory(client, "numa1", {"VCPU": {"total": 8, "allocation_ratio": 2.0}})
    _inventory(client, "pf0", {"CUSTOM_VF": {"total": 32, "min_unit": 1, "max_unit": 4}})
    _inventory(client, "cn1", {"VCPU": {"total": 4},
                               "MEMORY_MB": {"total": 32768, "reserved": 512,
                                             "allocation_ratio": 1.5, "max_unit": 16384}})
    _inventory(client, "ss1", {"DISK_GB": {"total": 2000, "reserved": 100, "min_unit": 10,
                                           "max_unit": 500, "step_size": 10}})
    for i in range(2, 13):
        name = f"cn{i}"
        _inventory(client, name, {"VCPU": {"total": 4 * i, "allocation_ratio": 16.0},
                                  "MEMORY_MB": {"total": 2048 * i, "reserved": 512},
                                  "DISK_GB": {"total": 100 * i}})
    _inventory(client, "cn4", {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192},
                               "CUSTOM_LICENSE": {"total": 5}})


def _links(client: httpx.Client) -> None:
    _link(client, "cn1", "traits", ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"])
    _link(client, "numa0", "traits", ["HW_NUMA_ROOT"])
    _link(client, "numa1", "traits", ["HW_NUMA_ROOT"])
    _link(client, "pf0", "traits", ["CUSTOM_PHYSNET_A"])
    _link(client, "ss1", "traits", ["MISC_SHARES_VIA_AGGREGATE"])
    _link(client, "cn3", "traits", ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"])
    for name in ("cn1", "cn2", "ss1"):
        _link(client, name, "aggregates", [U["aggA"]])
    _link(client, "cn2", "aggregates", [U["aggA"], U["aggB"]])
    for i in range(3, 13):
        _link(client, f"cn{i}", "aggregates", [U["aggB"]] + ([U["aggC"]] if i in (5, 6) else []))


def _allocate(client: httpx.Client, consumer: str, project: str, user: str,
              allocations: dict[str, dict[str, int]], consumer_type: str | None,
              generation: int | None = None) -> None:
    body: dict[str, Any] = {
        "allocations": {U[rp]: {"resources": res} for rp, res in allocations.items()},
        "project_id": U[project], "user_id": U[user], "consumer_generation": generation}
    version = "1.38"
    if consumer_type is None:
        version = "1.28"
    else:
        body["consumer_type"] = consumer_type
    _call(client, "PUT", f"/allocations/{U[consumer]}", body, version=version)


def _consumers(client: httpx.Client) -> None:
    _allocate(client, "inst-1", "p1", "u1", {"cn1": {"MEMORY_MB": 2048},
                                             "numa1": {"VCPU": 2}, "ss1": {"DISK_GB": 20}},
              "INSTANCE")
    _allocate(client, "inst-1", "p1", "u1", {"cn1": {"MEMORY_MB": 4096},
                                             "numa1": {"VCPU": 2}, "ss1": {"DISK_GB": 40}},
              "INSTANCE", generation=1)
    _allocate(client, "inst-2", "p1", "u2", {"numa0": {"VCPU": 4, "MEMORY_MB": 1024},
                                             "pf0": {"CUSTOM_VF": 2}}, "INSTANCE")
    _allocate(client, "mig-1", "p2", "u1", {"cn2": {"VCPU": 2, "MEMORY_MB": 1024,
                                                    "DISK_GB": 10}}, "MIGRATION")
    _allocate(client, "inst-3", "p2", "u1", {"cn3": {"VCPU": 2, "MEMORY_MB": 1024,
                                                     "DISK_GB": 10}}, "INSTANCE")
    _allocate(client, "bak-1", "p3", "u3", {"cn4": {"CUSTOM_LICENSE": 1}}, "BACKUP")
    _allocate(client, "old-1", "p3", "u3", {"cn5": {"VCPU": 1, "MEMORY_MB": 512}}, None)
    _allocate(client, "empty-1", "p3", "u3", {}, "INSTANCE")


def build_world(client: httpx.Client) -> World:
    """Make the world drawn above through `client`'s Placement; its names' uuids."""
    _providers(client)
    _inventories(client)
    _links(client)
    _consumers(client)
    return dict(U)


def _provider_reads(w: World) -> list[str]:
    paths = ["/resource_providers", "/resource_providers?name=cn2",
             f"/resource_providers?uuid={w['cn1']}", f"/resource_providers?member_of={w['aggA']}",
             f"/resource_providers?member_of=in:{w['aggA']},{w['aggC']}",
             f"/resource_providers?member_of=!{w['aggB']}",
             f"/resource_providers?member_of={w['aggB']}&member_of={w['aggC']}",
             f"/resource_providers?in_tree={w['numa0']}", f"/resource_providers?in_tree={w['cn4']}",
             f"/resource_providers?in_tree={w['cn11']}",
             "/resource_providers?resources=VCPU:4", "/resource_providers?resources=DISK_GB:100",
             "/resource_providers?resources=VCPU:1,MEMORY_MB:20000",
             "/resource_providers?resources=CUSTOM_VF:2",
             "/resource_providers?required=CUSTOM_GOLD",
             "/resource_providers?required=!CUSTOM_GOLD",
             "/resource_providers?required=in:CUSTOM_GOLD,HW_NUMA_ROOT",
             "/resource_providers?resources=VCPU:1&required=HW_CPU_X86_AVX2"
             f"&member_of={w['aggA']}"]
    for name in ("cn1", "numa0", "pf0", "cn2", "ss1", "cn4", "cn5", "cn11", "cn12", "rack"):
        base = f"/resource_providers/{w[name]}"
        paths += [base, base + "/inventories", base + "/usages", base + "/traits",
                  base + "/aggregates", base + "/allocations"]
    paths += [f"/resource_providers/{w['cn1']}/inventories/MEMORY_MB",
              f"/resource_providers/{w['ss1']}/inventories/DISK_GB"]
    return paths


def _usage_reads(w: World) -> list[str]:
    paths = [f"/allocations/{w[c]}"
             for c in ("inst-1", "inst-2", "mig-1", "inst-3", "bak-1", "old-1", "empty-1")]
    for project, user in (("p1", "u1"), ("p1", "u2"), ("p2", "u1"), ("p3", "u3")):
        paths += [f"/usages?project_id={w[project]}",
                  f"/usages?project_id={w[project]}&user_id={w[user]}"]
        paths += [f"/usages?project_id={w[project]}&consumer_type={kind}"
                  for kind in ("INSTANCE", "MIGRATION", "BACKUP", "all", "unknown")]
    return paths


def _catalogue_reads() -> list[str]:
    return ["/traits", "/traits?name=startswith:CUSTOM", "/traits?associated=true",
            "/traits?name=in:CUSTOM_GOLD,HW_NUMA_ROOT", "/traits/CUSTOM_GOLD",
            "/resource_classes", "/resource_classes/CUSTOM_VF", "/resource_classes/VCPU"]


def _candidate_reads(w: World) -> list[str]:
    ac = "/allocation_candidates?"
    return [ac + "resources=VCPU:1,MEMORY_MB:512",
            ac + "resources=VCPU:1,DISK_GB:10",
            ac + "resources=VCPU:1,MEMORY_MB:512,DISK_GB:20&required=CUSTOM_GOLD",
            ac + f"resources=VCPU:1&member_of={w['aggC']}",
            ac + "resources=VCPU:2&required=!CUSTOM_GOLD&limit=3",
            ac + "resources1=VCPU:1&resources2=CUSTOM_VF:1&group_policy=isolate",
            ac + "resources=MEMORY_MB:1024&resources1=VCPU:1&required1=HW_NUMA_ROOT"
                 "&resources2=CUSTOM_VF:1&required2=CUSTOM_PHYSNET_A&group_policy=none"
                 "&same_subtree=1,2",
            ac + "resources=VCPU:1&root_required=CUSTOM_GOLD",
            ac + "resources=VCPU:1&root_required=!CUSTOM_GOLD,!HW_CPU_X86_AVX2",
            ac + "resources=CUSTOM_LICENSE:1,VCPU:1",
            ac + "resources=DISK_GB:500&in_tree=" + w["cn1"]]


def reads(w: World) -> list[tuple[str, str]]:
    """(microversion, path) of every read compared: the latest, and the oldest that
    shows each shape (1.14 trees, 1.28 consumer generations, 1.10 candidates)."""
    paths = _provider_reads(w) + _usage_reads(w) + _catalogue_reads() + _candidate_reads(w)
    older = [("1.14", "/resource_providers"), ("1.0", f"/resource_providers/{w['cn1']}"),
             ("1.28", f"/allocations/{w['inst-1']}"), ("1.9", f"/usages?project_id={w['p1']}"),
             ("1.17", "/allocation_candidates?resources=VCPU:1,DISK_GB:10")]
    return [("latest", p) for p in paths] + older


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))


def normalised(path: str, body: Any) -> Any:
    """`body` with what is legitimately unordered put in one order: lists of providers,
    traits, classes, aggregates, allocation requests and their mappings (upstream
    builds those from sets). Which candidates a `limit` keeps depends on row order,
    so only their number is compared."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for request in out.get("allocation_requests") or []:
        for group, uuids in (request.get("mappings") or {}).items():
            request["mappings"][group] = sorted(uuids)
    if "limit=" in path:
        return {"allocation_requests": len(out["allocation_requests"])}
    for key in ("resource_providers", "traits", "resource_classes", "aggregates",
                "allocation_requests"):
        if isinstance(out.get(key), list):
            out[key] = _sorted(out[key])
    for summary in (out.get("provider_summaries") or {}).values():
        if isinstance(summary.get("traits"), list):
            summary["traits"] = sorted(summary["traits"])
    return out


def write_more(client: httpx.Client) -> None:
    """New rows of every kind after an import or export: each table's next id must be
    free (PostgreSQL's sequences moved past the copied ids), and the generations
    copied must be the ones the service compares against."""
    _provider(client, "late")
    _call(client, "PUT", f"/resource_providers/{U['late']}", {"name": "late",
                                                              "parent_provider_uuid": U["cn2"]})
    _call(client, "PUT", "/resource_classes/CUSTOM_LATE")
    _call(client, "PUT", "/traits/CUSTOM_LATE")
    _inventory(client, "late", {"CUSTOM_LATE": {"total": 3}, "VCPU": {"total": 2}})
    _link(client, "late", "traits", ["CUSTOM_LATE"])
    _link(client, "late", "aggregates", [U["late-agg"]])
    _allocate(client, "late-1", "late-p", "late-u", {"late": {"CUSTOM_LATE": 1}}, "LATE")
    _allocate(client, "inst-1", "p1", "u1", {"cn1": {"MEMORY_MB": 1024}}, "INSTANCE",
              generation=2)
    stale = client.put(f"/allocations/{U['inst-2']}", headers={
        "openstack-api-version": "placement 1.38"}, json={
        "allocations": {}, "project_id": U["p1"], "user_id": U["u2"],
        "consumer_generation": 0, "consumer_type": "INSTANCE"})
    assert stale.status_code == 409, stale.text
    assert _call(client, "GET", f"/allocations/{U['late-1']}")["consumer_type"] == "LATE"
