"""Runs inside `.venv-nova`: Nova 34's own SchedulerReportClient against stowage, via Keystone.

`python nova_report_cycle.py NOVA_CONF` reads a nova.conf whose only
Placement setting is a `[placement]` password section (auth_url, service
user, region, valid_interfaces: no endpoint), builds the report client as
nova-compute and nova-scheduler do (`report.report_client_singleton()`, an
openstacksdk adapter from `utils.get_sdk_adapter("placement")`), and runs a
compute node's cycle: provider with inventory, a claim of an instance,
a move of it to a migration consumer, the allocation's removal, the
provider's deletion. Prints one JSON object of what it read back.

Only Nova's interpreter runs this file; the project's code never does.
"""

from __future__ import annotations

import json
import sys
import uuid


def main(conf_file: str) -> dict[str, object]:
    import nova.conf
    from nova.scheduler.client import report

    from nova import context as nova_context
    from nova import objects

    conf = nova.conf.CONF
    conf(["--config-file", conf_file], project="nova")
    objects.register_all()
    ctx = nova_context.get_admin_context()
    client = report.report_client_singleton()
    node, instance, migration = (str(uuid.uuid4()) for _ in range(3))
    client.get_provider_tree_and_ensure_root(ctx, node, name="nova-node")
    inventory = {"VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8,
                          "step_size": 1, "allocation_ratio": 1.0},
                 "MEMORY_MB": {"total": 4096, "reserved": 512, "min_unit": 1,
                               "max_unit": 4096, "step_size": 1, "allocation_ratio": 1.0}}
    client.set_inventory_for_provider(ctx, node, inventory)
    project, user = uuid.uuid4().hex, uuid.uuid4().hex
    claimed = client.claim_resources(
        ctx, instance, {"allocations": {node: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}}}},
        project, user, allocation_request_version="1.12")
    held = client.get_allocs_for_consumer(ctx, instance)
    moved = client.move_allocations(ctx, instance, migration)
    after_move = client.get_allocs_for_consumer(ctx, migration)["allocations"]
    usages = client.get_allocations_for_resource_provider(ctx, node).allocations
    client.delete_allocation_for_instance(ctx, migration, force=True)
    left = client.get_allocs_for_consumer(ctx, migration)["allocations"]
    name = client.get_resource_provider_name(ctx, node)
    client._delete_provider(node)
    return {"claimed": claimed, "held": held["allocations"], "moved": moved,
            "after_move": after_move, "usages": usages, "left": left, "name": name,
            "after_delete": client.get(f"/resource_providers/{node}").status_code,
            "endpoint": client._client.get_endpoint(), "migration": migration}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
