"""Fuzz every write route: never a 5xx, and a 4xx changes nothing.

For each write route of the Placement, Compute, Image and Network route
tables (and each server action), hypothesis sends requests built from a valid
body made hostile (`fuzz_values`), with real or hostile ids in the path, as
admin, a service, a member, a reader, a token without roles or another
project's member, at old, latest and invalid microversions (Network has none:
it gets If-Match revisions instead), against the seeded world of `fuzz_world`
(specs per route: `fuzz_requests`)::

    for each example:
        restore the seeded tables if the last request changed anything
        dump every table -> send the request -> wait for the control plane
        status >= 500, unless deliberate    -> fail (request, answer, server log)
        4xx or deliberate 5xx, rows differ  -> fail (the rows that changed)

The only deliberate 5xx are the ones Neutron and Nova answer (`_DELIBERATE`):
Networking's 500 PortBindingError when no driver can bind a port binding and
501 NotImplementedError for a QoS change Placement would have to follow;
Compute's 501 notImplemented for a driver feature the simulated driver lacks
(os-hosts maintenance mode).

Bounded time: `STOWAGE_FUZZ_EXAMPLES` examples per route on every backend;
by default 25 on SQLite and 6 on PostgreSQL and MySQL (what a backend changes
-- column limits, integer ranges, collations -- shows in few examples; the
validation paths are the same), derandomized so that CI runs the same examples
every time; `STOWAGE_FUZZ_SEED=N` draws other examples (larger runs: set both).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from stowage import config
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.conftest import start_server
from tests.functional.fuzz_requests import (
    ACTIONS,
    SPECS,
    FuzzRequest,
    Spec,
    Target,
    requests_for,
    spec_of,
    targets,
)
from tests.functional.fuzz_world import Dump, World, difference, dump

_EXAMPLES = os.environ.get("STOWAGE_FUZZ_EXAMPLES")


def examples(backend: str) -> int:
    """Examples per route on `backend`: STOWAGE_FUZZ_EXAMPLES, else 25 on SQLite, 6 else."""
    return int(_EXAMPLES) if _EXAMPLES else 25 if backend == "sqlite" else 6

SEED = os.environ.get("STOWAGE_FUZZ_SEED")
TARGETS = targets()
# Where each service is mounted: the paths of its route table start below that.
_MOUNTS = {"placement": "/placement", "compute": "/compute", "image": "/image",
           "network": "/network"}
# service -> (status, NeutronError type) of the 5xx answers its API documents as refusals.
_DELIBERATE = {"network": {(500, "PortBindingError"), (501, "NotImplementedError")},
               "compute": {(501, "notImplemented")}}


class Attacker:
    """Sends fuzzed requests to one seeded world and checks each answer."""

    def __init__(self, world: World, backend: str) -> None:
        self.world = world
        self.backend = backend
        self.client = httpx.Client(base_url=world.live.url, timeout=60)
        self.before: Dump | None = None
        self.errors = _ErrorLog()
        # Answers per status for the route under attack (printed: `pytest -s` shows them).
        self.statuses: Counter[int] = Counter()

    def attack(self, request: FuzzRequest) -> None:
        world = self.world
        if self.before is None:
            world.restore()
            self.before = dump(world.live)
        self.errors.records.clear()
        resp = self.send(request)
        self.statuses[resp.status_code] += 1
        refused = 400 <= resp.status_code < 500 or _deliberate(request.target, resp)
        assert resp.status_code < 500 or refused, self.report(request, resp)
        world.settle()
        after = dump(world.live)
        if refused:
            assert after == self.before, (self.report(request, resp) + "\nrows changed:\n"
                                          + difference(self.before, after))
        self.before = after if after == self.before else None

    def send(self, request: FuzzRequest) -> httpx.Response:
        resolve = self.world.resolve
        url = _MOUNTS[request.target.service] + request.url_path(resolve)
        headers = [(name.encode(), _header_bytes(name, value))
                   for name, value in request.headers(resolve).items()]
        return self.client.request(request.target.method, url, headers=headers,
                                   content=request.content(resolve))

    def report(self, request: FuzzRequest, resp: httpx.Response) -> str:
        resolve = self.world.resolve
        body = request.content(resolve)
        shown = body[:2000] + (b"... (%d bytes)" % len(body) if len(body) > 2000 else b"")
        return (f"[{self.backend}] {request.target.method} "
                f"{_MOUNTS[request.target.service]}{request.url_path(resolve)[:500]}\n"
                f"headers: {request.headers(resolve)}\nbody: {shown!r}\n"
                f"-> {resp.status_code} {resp.text[:2000]}\n{self.errors.text()}")


def _header_bytes(name: str, value: str) -> bytes:
    """Header values as UTF-8 bytes (httpx would refuse non-ASCII text itself); If-Match
    as Latin-1 where it can be, the way the server reads every header back, so that the
    value drawn is the value the handler parses (a superscript digit, say)."""
    if name == "if-match":
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError:
            pass
    return value.encode()


def _deliberate(target: Target, resp: httpx.Response) -> bool:
    """Whether a 5xx is one the service's API documents (and so must change nothing)."""
    allowed = _DELIBERATE.get(target.service)
    if not allowed or resp.status_code < 500:
        return False
    try:
        body = resp.json()
        # Neutron names the error's type; Nova's body is keyed by it.
        error_type = (body["NeutronError"]["type"] if target.service == "network"
                      else next(iter(body)))
    except (ValueError, KeyError, TypeError, StopIteration):
        return False
    return (resp.status_code, error_type) in allowed


class _ErrorLog(logging.Handler):
    """The service's logged errors (tracebacks of a 500) while a request runs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        formatter = logging.Formatter()
        return "\n".join(formatter.format(r)[-3000:] for r in self.records[-3:])


def _settings(url: str, store: str) -> config.Settings:
    """No periodic task runs during the fuzzing (a heartbeat would be a changed row); image
    data (uploads, snapshots) in the throw-away `store`."""
    return config.Settings(database=url, compute=config.ComputeSettings(
        report_interval=86400, update_resources_interval=86400, service_down_time=10**7),
        image=config.ImageSettings(store_dir=store))


@pytest.fixture(scope="module", params=BACKENDS)
def attacker(request: pytest.FixtureRequest) -> Iterator[Attacker]:
    with migrated_database(request.param) as url, tempfile.TemporaryDirectory() as store:
        live = start_server(_settings(url, store), at_root=False)
        logger = logging.getLogger("stowage")
        attacker = Attacker(World(live), request.param)
        logger.addHandler(attacker.errors)
        try:
            attacker.world.seed()
            yield attacker
        finally:
            logger.removeHandler(attacker.errors)
            attacker.client.close()
            live.stop()
            live.db.dispose()


def test_every_write_route_has_a_fuzz_spec() -> None:
    missing = [str(t) for t in TARGETS if spec_of(t) is None]
    assert not missing, ("write routes (or server actions) that the fuzz test cannot attack; "
                         "add a Spec to SPECS or ACTIONS in tests/functional/fuzz_requests.py: "
                         + ", ".join(missing))


def test_every_fuzz_spec_names_a_route() -> None:
    known = {t.key for t in TARGETS}
    actions = {t.action for t in TARGETS if t.action}
    stale = [" ".join(k) for k in SPECS if k not in known]
    stale += [f"server action {a}" for a in ACTIONS if a not in actions]
    assert not stale, f"fuzz specs for routes that no longer exist: {stale}"


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_no_5xx_and_no_change_on_4xx(attacker: Attacker, target: Target) -> None:
    spec = spec_of(target)
    if spec is None:
        pytest.fail(f"no fuzz spec for {target}: add one to tests/functional/fuzz_requests.py")
    _fuzz(attacker, target, spec)


def _fuzz(attacker: Attacker, target: Target, spec: Spec) -> None:
    strategy = requests_for(target, spec)

    @settings(max_examples=examples(attacker.backend), deadline=None, database=None,
              derandomize=SEED is None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def attack(data: st.DataObject) -> None:
        attacker.attack(data.draw(strategy, label="request"))

    if SEED is not None:
        attack = seed(int(SEED))(attack)
    attacker.statuses.clear()
    attack()
    print(f"{target}: " + ", ".join(f"{n}x{status}"
                                    for status, n in sorted(attacker.statuses.items())))
