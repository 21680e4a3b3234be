"""`stowage manage placement heal-allocations` and `audit --delete`, run as an operator would:
a separate process on the live server's database, while the server runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from tests.functional import servers as s
from tests.functional.conftest import Cloud


@pytest.fixture(autouse=True)
def _no_periodic_reconcile(cloud: Cloud) -> None:
    """The agents' periodic reconcile repairs allocations too; these tests break them by
    hand and must find them broken until the command runs (the cloud fixture restores it)."""
    cloud.configure(update_resources_interval=86400)


def manage(cloud: Cloud, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stowage", "manage", "placement", *args,
         "--database", cloud.live.db.url],
        capture_output=True, text=True, timeout=120, check=False)


Held = dict[str, dict[str, dict[str, int]]]


def _two_servers(cloud: Cloud) -> tuple[list[str], dict[str, str], Held]:
    nodes = {name: cloud.add_host(name) for name in ("h1", "h2")}
    flavor = s.flavor(cloud, "small", 2, 512, 10)
    image = s.image(cloud)
    ids = [s.boot(cloud, f"vm{i}", flavor, image) for i in range(2)]
    before = {sid: s.held(cloud, sid) for sid in ids}
    for sid in ids:
        node = nodes[s.host_of(cloud, sid)]
        assert before[sid] == {node: s.flavor_amounts(2, 512, 10)}
    return ids, nodes, before


def _drop(cloud: Cloud, consumer: str) -> None:
    resp = cloud.placement.delete(f"/allocations/{consumer}")
    assert resp.status_code == 204, resp.text


def test_heal_recreates_a_deleted_allocation_and_dry_run_changes_nothing(cloud: Cloud) -> None:
    ids, _, before = _two_servers(cloud)
    _drop(cloud, ids[0])
    audit = manage(cloud, "audit")
    assert audit.returncode == 1 and ids[0] in audit.stdout, audit.stdout

    dry = manage(cloud, "heal-allocations", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{ids[0]}: would create allocations" in dry.stdout
    assert ids[1] not in dry.stdout  # healthy instances are quiet without --verbose
    assert "Dry run: processed 2 instance(s): 1 would be healed" in dry.stderr
    assert s.held(cloud, ids[0]) == {}

    healed = manage(cloud, "heal-allocations", "--verbose")
    assert healed.returncode == 0, healed.stderr
    assert f"{ids[0]}: allocations created" in healed.stdout
    assert f"{ids[1]}: allocations match the flavor" in healed.stdout
    assert "looked at 2/2 instances" in healed.stderr
    assert {sid: s.held(cloud, sid) for sid in ids} == before
    s.assert_invariants(cloud)

    again = manage(cloud, "heal-allocations")
    assert again.returncode == 4, again.stderr  # Nova's "nothing to heal"
    assert {sid: s.held(cloud, sid) for sid in ids} == before


def test_mismatched_allocation_is_reported_and_replaced_only_with_force(cloud: Cloud) -> None:
    ids, nodes, before = _two_servers(cloud)
    node = nodes[s.host_of(cloud, ids[0])]
    current = cloud.placement.get(f"/allocations/{ids[0]}").json()
    wrong = {"allocations": {node: {"resources": {"VCPU": 1, "MEMORY_MB": 64}}},
             "project_id": current["project_id"], "user_id": current["user_id"],
             "consumer_generation": current["consumer_generation"], "consumer_type": "INSTANCE"}
    assert cloud.placement.put(f"/allocations/{ids[0]}", json=wrong).status_code == 204

    plain = manage(cloud, "heal-allocations")
    assert plain.returncode == 4, plain.stderr
    assert f"{ids[0]}: allocations differ from the flavor" in plain.stdout
    assert s.held(cloud, ids[0]) == {node: {"VCPU": 1, "MEMORY_MB": 64}}

    no_instance = manage(cloud, "heal-allocations", "--force")
    assert no_instance.returncode == 127
    assert "--force requires --instance" in no_instance.stderr

    forced = manage(cloud, "heal-allocations", "--force", "--instance", ids[0])
    assert forced.returncode == 0, forced.stderr
    assert f"{ids[0]}: allocations replaced" in forced.stdout
    assert {sid: s.held(cloud, sid) for sid in ids} == before
    s.assert_invariants(cloud)


def test_max_count_heals_in_batches(cloud: Cloud) -> None:
    ids, _, before = _two_servers(cloud)
    for sid in ids:
        _drop(cloud, sid)
    first = manage(cloud, "heal-allocations", "--max-count", "1")
    assert first.returncode == 1, first.stderr  # more left to do
    assert "--max-count 1 reached" in first.stderr
    assert sum(1 for sid in ids if s.held(cloud, sid)) == 1
    second = manage(cloud, "heal-allocations", "--max-count", "1")
    assert second.returncode == 0, second.stderr
    assert {sid: s.held(cloud, sid) for sid in ids} == before
    assert manage(cloud, "heal-allocations", "--max-count", "1").returncode == 4


def test_bad_input_and_unknown_instance_are_exit_127(cloud: Cloud) -> None:
    _two_servers(cloud)
    for args, message in (
            (("--instance", "not-a-uuid"), "is not a UUID"),
            (("--instance", s.new_uuid()), "not found"),
            (("--max-count", "0"), "--max-count must be a positive integer")):
        result = manage(cloud, "heal-allocations", *args)
        assert result.returncode == 127, (args, result.stderr)
        assert message in result.stderr


def test_instances_in_a_task_are_left_to_their_operation(cloud: Cloud) -> None:
    ids, _, _ = _two_servers(cloud)
    _drop(cloud, ids[0])
    with cloud.live.cell_db.write() as conn:  # as if a move of it were under way
        conn.execute(sa.update(t.instances).where(t.instances.c.uuid == ids[0])
                     .values(task_state="resize_prep"))
    result = manage(cloud, "heal-allocations", "--instance", ids[0])
    assert result.returncode == 4, result.stderr
    assert "skipped: in a task (task_state resize_prep" in result.stdout
    assert s.held(cloud, ids[0]) == {}


def test_heal_puts_disk_on_the_sharing_provider(cloud: Cloud) -> None:
    cloud.add_host("h1", shared_storage="nfs")
    flavor = s.flavor(cloud, "small", 2, 512, 10)
    sid = s.boot(cloud, "vm", flavor, s.image(cloud))
    before = s.held(cloud, sid)
    assert len(before) == 2  # the node and the sharing provider
    _drop(cloud, sid)
    result = manage(cloud, "heal-allocations")
    assert result.returncode == 0, result.stderr
    assert s.held(cloud, sid) == before
    s.assert_invariants(cloud)


def test_audit_delete_removes_only_what_nobody_owns(cloud: Cloud) -> None:
    ids, nodes, before = _two_servers(cloud)
    stray = s.new_uuid()
    body = {"allocations": {nodes["h1"]: {"resources": {"VCPU": 1}}},
            "project_id": "p", "user_id": "u", "consumer_generation": None,
            "consumer_type": "INSTANCE"}
    assert cloud.placement.put(f"/allocations/{stray}", json=body).status_code == 204
    found = manage(cloud, "audit")
    assert found.returncode == 1 and stray in found.stdout

    deleted = manage(cloud, "audit", "--delete")
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert f"deleted allocations of {stray} (unknown consumer)" in deleted.stdout
    assert s.held(cloud, stray) == {}
    assert {sid: s.held(cloud, sid) for sid in ids} == before
