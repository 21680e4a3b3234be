"""Runs inside `.venv-nova`: Nova's own tests, with Placement at a live stowage.

`python inside.py --placement URL --tests FILE --results FILE` loads the
test ids listed in FILE, points Placement's test fixture at URL instead of
the in-process upstream app, and writes one JSON line per test (id, status,
seconds, details) as it goes, so a run that is killed still reports what
finished.

This file imports only what the side venv has (Nova, upstream Placement's
fixture, requests); the project's own code never runs in this interpreter.

The seam is `placement.tests.functional.fixtures.placement.PlacementFixture`:
Nova's fixture subclasses it and sends the report client's requests to
`self.endpoint` with keystoneauth. With the database and the wsgi-intercept
switched off, the upstream fixture still registers Placement's options and
policy defaults as Nova's tests expect; `endpoint` becomes the live server,
which is emptied wherever upstream would make a new in-memory database
(Nova's tests reuse uuid sentinels, so leftovers would break the next test).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import unittest
from typing import Any

HEADERS = {"x-auth-token": "admin", "OpenStack-API-Version": "placement 1.39",
           "Accept": "application/json"}


class PlacementEmptyingError(RuntimeError):
    """The live Placement could not be emptied; the test cannot start clean."""


def _checked(response: Any, what: str) -> Any:
    if response.status_code >= 400 and response.status_code != 404:
        raise PlacementEmptyingError(
            f"{what}: {response.status_code} {response.text[:300]}")
    return response


def _depth(provider: dict, parents: dict[str, str | None]) -> int:
    depth, uuid = 0, provider["uuid"]
    while parents.get(uuid):
        depth, uuid = depth + 1, parents[uuid]
    return depth


def empty_placement(session: Any, url: str) -> None:
    """Delete every allocation, provider, custom class and custom trait.

    Through the API, as a user would: allocations first (a provider with
    allocations cannot go), then providers deepest first (a parent with
    children cannot go), then the custom names nothing uses any more.
    """
    providers = _checked(session.get(f"{url}/resource_providers"),
                         "list providers").json()["resource_providers"]
    consumers: set[str] = set()
    for rp in providers:
        found = _checked(session.get(f"{url}/resource_providers/{rp['uuid']}/allocations"),
                         "list allocations").json()["allocations"]
        consumers.update(found)
    for consumer in sorted(consumers):
        _checked(session.delete(f"{url}/allocations/{consumer}"), "delete allocations")
    parents = {rp["uuid"]: rp["parent_provider_uuid"] for rp in providers}
    for rp in sorted(providers, key=lambda p: -_depth(p, parents)):
        _checked(session.delete(f"{url}/resource_providers/{rp['uuid']}"), "delete provider")
    classes = _checked(session.get(f"{url}/resource_classes"),
                       "list resource classes").json()["resource_classes"]
    for rc in classes:
        if rc["name"].startswith("CUSTOM_"):
            _checked(session.delete(f"{url}/resource_classes/{rc['name']}"),
                     "delete resource class")
    traits = _checked(session.get(f"{url}/traits", params={"name": "startswith:CUSTOM_"}),
                      "list traits").json()["traits"]
    for trait in traits:
        _checked(session.delete(f"{url}/traits/{trait}"), "delete trait")


def point_fixture_at(url: str) -> None:
    """Make every Placement fixture use the live server at `url`.

    Stowage is emptied exactly where upstream would start a new database:
    when a fixture is set up with `db=True` (its default; some tests set one
    up twice), and when a test sets up Placement's `Database` fixture itself
    to share one database between fixtures made with `db=False` -- those
    must see each other's data, so they empty nothing.
    """
    import requests
    from placement.tests import fixtures as database_fixtures
    from placement.tests.functional.fixtures import placement as upstream

    session = requests.Session()
    session.headers.update(HEADERS)
    fixture_setup = upstream.PlacementFixture.setUp
    database_setup = database_fixtures.Database.setUp

    def _configure_placement(self, conf_fixture) -> None:
        # Required by Placement's options; never opened: no Placement runs here.
        conf_fixture.config(connection="sqlite://", group="placement_database")

    def setUp(self) -> None:  # noqa: N802 - fixtures' name
        new_database, self.db, self.use_intercept = self.db, False, False
        fixture_setup(self)
        self.endpoint = url
        if new_database:
            empty_placement(session, url)

    def database_setUp(self) -> None:  # noqa: N802
        database_setup(self)
        empty_placement(session, url)

    upstream.PlacementFixture._configure_placement = _configure_placement
    upstream.PlacementFixture.setUp = setUp
    database_fixtures.Database.setUp = database_setUp


class JsonLinesResult(unittest.TestResult):
    """One line per finished test, flushed at once."""

    def __init__(self, out) -> None:
        super().__init__()
        self.out = out
        self.started = 0.0

    def startTest(self, test) -> None:  # noqa: N802
        super().startTest(test)
        self.started = time.monotonic()

    def _write(self, test, status: str, details: str = "") -> None:
        line = {"id": test.id(), "status": status,
                "seconds": round(time.monotonic() - self.started, 3), "details": details}
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def addSuccess(self, test) -> None:  # noqa: N802
        super().addSuccess(test)
        self._write(test, "success")

    def addFailure(self, test, err) -> None:  # noqa: N802
        super().addFailure(test, err)
        self._write(test, "fail", "".join(traceback.format_exception(*err)))

    def addError(self, test, err) -> None:  # noqa: N802
        super().addError(test, err)
        self._write(test, "fail", "".join(traceback.format_exception(*err)))

    def addSkip(self, test, reason) -> None:  # noqa: N802
        super().addSkip(test, reason)
        self._write(test, "skip", str(reason))

    def addExpectedFailure(self, test, err) -> None:  # noqa: N802
        super().addExpectedFailure(test, err)
        self._write(test, "success", "expected failure")

    def addUnexpectedSuccess(self, test) -> None:  # noqa: N802
        super().addUnexpectedSuccess(test)
        self._write(test, "fail", "unexpected success")


def _ids(suite: unittest.TestSuite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _ids(test)
        else:
            yield test.id()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", required=True, help="file of unittest names")
    parser.add_argument("--list", metavar="FILE",
                        help="write the test ids the names expand to into FILE, run nothing")
    parser.add_argument("--placement", help="the live Placement's URL")
    parser.add_argument("--results", help="JSON lines file to append to")
    args = parser.parse_args()
    import nova.tests  # noqa: F401 - Nova's eventlet patching comes before any socket use
    with open(args.tests, encoding="utf-8") as listing:
        names = [line.strip() for line in listing if line.strip()]
    suite = unittest.TestLoader().loadTestsFromNames(names)
    if args.list:
        with open(args.list, "w", encoding="utf-8") as out:
            out.writelines(f"{test_id}\n" for test_id in _ids(suite))
        return 0
    if not (args.placement and args.results):
        parser.error("--placement and --results are needed to run tests")
    point_fixture_at(args.placement.rstrip("/"))
    with open(args.results, "a", encoding="utf-8") as out:
        suite.run(JsonLinesResult(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
