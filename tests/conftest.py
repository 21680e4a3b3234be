"""Shared test configuration: every database-backed test runs on each backend.

`STOWAGE_TEST_BACKENDS` (default "sqlite,postgresql,mysql") selects backends;
each run creates throw-away databases on the local servers and drops them.
The conformance, Tempest and Nova summaries are plugins registered here: under
pytest-xdist only this top-level conftest is loaded where the summary prints.
"""

from __future__ import annotations

import compileall
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests import dbs
from tests.conformance import databases as conformance_databases
from tests.conformance.summary import ConformanceSummary
from tests.keystone.fixture import keystone  # noqa: F401 -- the real Keystone's fixture
from tests.nova.suite import SUMMARY_PROPERTY as NOVA_SUMMARY
from tests.outcomes import SideSuiteSummary
from tests.tempest.suite import SUMMARY_PROPERTY as TEMPEST_SUMMARY

BACKENDS = [b for b in os.environ.get("STOWAGE_TEST_BACKENDS",
                                      "sqlite,postgresql,mysql").split(",") if b]


# Files of few tests that each run for minutes (a whole upstream suite; the
# `openstack` CLI, ~2 s a command; a deployment of separate processes). They go
# first, so that pytest-xdist runs them beside the rest instead of at the end,
# where one worker would run them alone.
LONG_FIRST = ("tests/nova/", "tests/tempest/", "tests/functional/test_openstack_cli",
              "tests/functional/test_scale_out.py")


# Modules of whole move and port flows (seconds per test: boots, moves, bindings),
# and of flows over the APIs whose subject is not what a database changes (the
# tracker's and nova-manage's heal, the scheduler's filters, policy defaults,
# aggregates, the services and hypervisors views). They run entirely on SQLite;
# on PostgreSQL and MySQL a quarter of their tests runs by default (every
# fourth, the same ones each run), since what a database changes -- locking,
# isolation, types, column limits -- the Placement, claim-race, lease, bulk,
# input, quota and conformance tests cover test by test.
# STOWAGE_BACKENDS_FULL=1 runs every test on every backend.
SAMPLED_ON_SERVER_DATABASES = tuple(f"tests/functional/test_{name}.py" for name in (
    "ports_interfaces", "ports_upgrade", "ports_live_migration", "ports_move_failures",
    "ports_evacuate", "ports_shelve", "ports_boot", "ports_moves", "live_migration",
    "live_migration_failures", "delete_during_move", "evacuate", "evacuate_failures",
    "shelve", "shelve_failures", "shelve_delete", "move_failures", "rebuild", "moves",
    "move_checks", "delete_on_down_host", "guest_actions", "heal", "ports_heal",
    "scheduler", "services_hypervisors", "os_aggregates", "policy_defaults",
    # Flows whose subject is the agents, the scheduler or the API's documents, not
    # what the database stores: simulated hosts' registration and reconcile, fault
    # injection, external events, server groups' views, the scheduler reading
    # candidates in-process, network devices' providers, version documents, the
    # conductor's refusals, power sync, drain plans. Kept whole on every backend:
    # the files about lists, paging and filters (servers_api, migrations_api,
    # servers_2_83_to_2_90, dashboard_http: NULL ordering and collations differ),
    # stored values (server_create_data, compute_extras) and the two-database
    # cross-cell moves (cells_cross, cells_multi).
    "hosts", "simulator_faults", "server_external_events", "server_groups",
    "scheduler_local", "network_devices", "compute_versions", "live_migration_refusals",
    "power_sync", "drain"))
SAMPLE_EVERY = 4


def _backend_of(item: pytest.Item) -> str | None:
    """The database a parametrized test runs on (its id's `[...]` part names it)."""
    name = item.nodeid.rpartition("[")[2]
    return next((b for b in ("postgresql", "mysql") if b in name.split("-")
                 or name.rstrip("]").split("-")[-1] == b or name == f"{b}]"), None)


def _sampled(items: list[pytest.Item], config: pytest.Config) -> list[pytest.Item]:
    if os.environ.get("STOWAGE_BACKENDS_FULL") == "1":
        return items
    seen: Counter[tuple[str, str]] = Counter()
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        path, backend = item.nodeid.split("::")[0], _backend_of(item)
        if backend is None or path not in SAMPLED_ON_SERVER_DATABASES:
            kept.append(item)
            continue
        seen[(path, backend)] += 1
        (kept if seen[(path, backend)] % SAMPLE_EVERY == 1 else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    return kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sample the long flows on server databases; then the long side suites first, then
    files by test count, as xdist would order them.

    xdist's own reordering (off through `--no-loadscope-reorder` in pyproject)
    sorts by test count only, which puts these one-test files last. Sorting is
    stable, so a file's tests keep their order.
    """
    items[:] = _sampled(items, config)
    counts = Counter(item.nodeid.split("::")[0] for item in items)

    def rank(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::")[0]
        first = next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)),
                     len(LONG_FIRST))
        return (first, -counts[path])

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the controller
        _compile_sources()
    config.pluginmanager.register(ConformanceSummary(), "stowage-conformance-summary")
    config.pluginmanager.register(SideSuiteSummary(TEMPEST_SUMMARY, "tempest"),
                                  "stowage-tempest-summary")
    config.pluginmanager.register(SideSuiteSummary(NOVA_SUMMARY, "nova"),
                                  "stowage-nova-summary")


def pytest_sessionfinish() -> None:
    """Wait for the throw-away databases still being dropped (tests/dbs.py drops them on
    a background thread), and drop this process's templates; a failed drop is reported."""
    for failure in dbs.finish_drops() + conformance_databases.finish_drops():
        # on stderr: an xdist worker has no terminal
        print(f"could not drop a test database: {failure}", file=sys.stderr)


def _compile_sources() -> None:
    """Byte-compile stowage once, so that the hundreds of `stowage serve` processes the
    tests start do not each compile it again: with PYTHONDONTWRITEBYTECODE set (as on
    CI machines) nothing would ever cache it, at ~0.3 s of CPU per process start."""
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "stowage",
                           quiet=1)
