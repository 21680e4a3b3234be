"""Which of Nova's functional tests run against stowage's Placement.

Names are unittest names (module, class or test) under
`nova.tests.functional`. The default selection fits CI (about 3
minutes on one core): a sample of the report-client, resource-tracker and
nova-manage heal tests, and of the moving, resize and reschedule classes that
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


# 42 tests, about 3 minutes on one core (Nova's own set-up is most of it): a
# sample of each area; `FULL` runs all of them.
DEFAULT: tuple[str, ...] = (
    *_some("test_report_client.SchedulerReportClientTests",
           "test_client_report_smoke", "test_get_provider_tree_with_nested_and_aggregates",
           "test_update_from_provider_tree", "test_alloc_cands_smoke", "test_reshape",
           "test_update_from_provider_tree_reshape_conflict_retry"),
    *_some("compute.test_resource_tracker.TestUpdateComputeNodeReservedAndAllocationRatio",
           "test_update_inventory_reserved_and_allocation_ratio_from_conf",
           "test_allocation_ratio_overwritten_from_config"),
    *_some("compute.test_resource_tracker.TestProviderConfig", "test_end_to_end"),
    *_some("test_nova_manage.TestNovaManagePlacementHealAllocations",
           "test_heal_allocations_paging", "test_heal_allocations_update_sentinel_consumer",
           "test_heal_allocations_force_allocation"),
    *_some("test_nova_manage.TestNovaManagePlacementHealPortAllocations",
           "test_heal_port_allocation_only",
           "test_heal_allocation_create_allocation_with_port_allocation",
           "test_heal_multiple_port_allocations_rollback_fails"),
    _F + "test_nova_manage.TestNovaManagePlacementAudit",
    *_some("test_servers.ServerMovingTests",
           "test_resize_confirm", "test_resize_revert",
           "test_finish_resize_fails_allocation_cleanup",
           "test_evacuate_rebuild_on_dest_fails_clean_hypervisor",
           "test_live_migrate_rollback_cleans_dest_node_allocations",
           "test_shelve_offload_unshelve_diff_host"),
    *_some("test_servers.ServerMovingTestsWithNestedResourceRequests",
           "test_resize_revert", "test_live_migrate"),
    _F + "test_servers.ServerRescheduleTests",
    _F + "test_servers.ConsumerGenerationConflictTest",
    *_some("test_servers_resource_request.ServerMoveWithPortResourceRequestTest",
           "test_resize_revert_with_qos_ports", "test_live_migrate_with_qos_port",
           "test_evacuate_with_qos_port"),
    _F + "test_servers_resource_request.PortResourceRequestReSchedulingTest",
)

# What runs again on PostgreSQL and MySQL (about 30 s each): Placement's
# consumer-generation conflicts as Nova meets them mid-move, where a database's
# locking shows.
BACKEND_SLICE: tuple[str, ...] = _some(
    "test_servers.ConsumerGenerationConflictTest",
    "test_create_server_fails_as_placement_reports_consumer_conflict",
    "test_migrate_move_allocation_fails_due_to_conflict",
    "test_confirm_migrate_delete_alloc_on_source_fails",
    "test_revert_migrate_delete_dest_allocation_fails_due_to_conflict",
    "test_live_migrate_drop_allocation_on_source_fails",
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
