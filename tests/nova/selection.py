"""Which of Nova's functional tests run against stowage's Placement.

Names are unittest names (module, class or test) under
`nova.tests.functional`. The default selection fits CI (about 7.5
minutes on one core): every report-client and resource-tracker test, the nova-manage
heal tests, and a spread of the moving, resize and reschedule classes that
lean hardest on Placement (consumer generations, migration-owned
allocations, nested and port resource requests). `FULL` is the whole
Placement-facing part of Nova's suite, for release checks. The default
runs on SQLite; `BACKEND_SLICE` runs on PostgreSQL and MySQL too.
"""

from __future__ import annotations

__all__ = ["BACKEND_SLICE", "DEFAULT", "FULL"]

_F = "nova.tests.functional."


def _some(cls: str, *tests: str) -> tuple[str, ...]:
    return tuple(f"{_F}{cls}.{test}" for test in tests)


# 103 tests, about 7.5 minutes on one core (Nova's own set-up is most of it).
DEFAULT: tuple[str, ...] = (
    _F + "test_report_client",
    _F + "compute.test_resource_tracker",
    _F + "test_nova_manage.TestNovaManagePlacementHealAllocations",
    _F + "test_nova_manage.TestNovaManagePlacementHealPortAllocations",
    _F + "test_nova_manage.TestNovaManagePlacementAudit",
    *_some("test_servers.ServerMovingTests",
           "test_resize_confirm", "test_resize_revert", "test_resize_confirm_same_host",
           "test_resize_revert_same_host", "test_resize_not_enough_resource",
           "test_resize_delete_while_verify", "test_finish_resize_fails_allocation_cleanup",
           "test_resize_reschedule_uses_host_lists_1_fail",
           "test_resize_reschedule_uses_host_lists_not_enough_alts",
           "test_migrate_confirm", "test_migrate_revert", "test_migrate_no_valid_host",
           "test_rescheduling_when_migrating_instance", "test_evacuate_clean_hypervisor",
           "test_evacuate_rebuild_on_dest_fails_clean_hypervisor", "test_live_migrate",
           "test_live_migrate_rollback_cleans_dest_node_allocations",
           "test_shelve_offload_unshelve_diff_host", "test_swap_expand_0_to_1024_revert"),
    *_some("test_servers.ServerMovingTestsWithNestedResourceRequests",
           "test_resize_confirm", "test_resize_revert", "test_migrate_confirm",
           "test_live_migrate", "test_evacuate_clean_hypervisor"),
    _F + "test_servers.ServerRescheduleTests",
    _F + "test_servers.ConsumerGenerationConflictTest",
    *_some("test_servers_resource_request.ServerMoveWithPortResourceRequestTest",
           "test_resize_server_with_qos_ports", "test_resize_revert_with_qos_ports",
           "test_resize_server_with_qos_port_reschedule_failure",
           "test_migrate_server_with_qos_port_reschedule_success",
           "test_migrate_revert_with_qos_ports", "test_live_migrate_with_qos_port",
           "test_evacuate_with_qos_port", "test_unshelve_offloaded_server_with_qos_port"),
    _F + "test_servers_resource_request.PortResourceRequestReSchedulingTest",
)

# What runs again on PostgreSQL and MySQL (about 1.5 minutes each): the report
# client's every call, and Placement's consumer-generation conflicts as Nova
# meets them mid-move -- the parts where a database's locking shows.
BACKEND_SLICE: tuple[str, ...] = (
    _F + "test_report_client",
    _F + "test_servers.ConsumerGenerationConflictTest",
)

# Regression tests for move bugs that involve Placement allocations
# (modules under regressions/ naming a move and Placement or allocations),
# and 1679750, which shares one Placement database between two fixtures.
_PLACEMENT_REGRESSIONS: tuple[str, ...] = (
    "1595962", "1628606", "1679750", "1702454", "1713783", "1718455", "1718512", "1735407",
    "1741364", "1764556", "1764883", "1781286", "1790204", "1794996", "1797580", "1815153",
    "1825020", "1825034", "1825537", "1830747", "1835822", "1845291", "1848343", "1849165",
    "1862633", "1890244", "1896463", "1978983", "2025480", "2080531", "2143972", "2153425",
)

FULL: tuple[str, ...] = (
    _F + "test_report_client",
    _F + "compute.test_resource_tracker",
    _F + "test_nova_manage.TestNovaManagePlacementHealAllocations",
    _F + "test_nova_manage.TestNovaManagePlacementHealPortAllocations",
    _F + "test_nova_manage.TestNovaManagePlacementHealPortAllocationsExtended",
    _F + "test_nova_manage.TestNovaManagePlacementHealPortAllocationsMultiGroup",
    _F + "test_nova_manage.TestNovaManagePlacementSyncAggregates",
    _F + "test_nova_manage.TestNovaManagePlacementAudit",
    _F + "test_servers",
    _F + "test_servers_resource_request",
    _F + "test_servers_provider_tree",
    _F + "test_cold_migrate",
    *(f"{_F}regressions.test_bug_{bug}" for bug in _PLACEMENT_REGRESSIONS),
)
