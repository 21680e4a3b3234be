"""The counters and histograms stowage's hot paths move, one call per event.

Each hook is a single call from the code it measures (web/app.py, the
scheduler, the conductor, the AMQP transport), so that those files carry no
metrics code of their own. Label children are looked up in a dict first:
prometheus-client's `labels()` validates and locks on every call, and an
HTTP request must cost a few microseconds here, not tens.

Label values are bounded sets: route *templates* (`/servers/{server_id}`,
never a uuid), operation names, filter names, the RPC target's kind
(`compute`, not `compute.host17`). With `serve --workers N` these values
live in files of the per-run directory (prometheus-client's multiprocess
mode, `workers.py`) and the scrape sums them over the workers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["REGISTRY", "OperationRun", "candidates_answered", "claim", "http_request",
           "no_valid_host", "no_valid_host_early", "operation_finished", "operation_recovered",
           "operation_started", "rolled_back", "rpc_call"]

# This process's metrics (the default registry's process/platform collectors stay out:
# under `--workers N` they would describe one worker only).
REGISTRY = CollectorRegistry(auto_describe=True)

_LONG = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0)

HTTP_REQUESTS = Counter(
    "stowage_http_requests", "HTTP requests answered, by service, route template, method "
    "and status.", ("service", "route", "method", "status"), registry=REGISTRY)
HTTP_SECONDS = Histogram(
    "stowage_http_request_duration_seconds", "Time from a request's headers to its "
    "answer, by service, route template and method.", ("service", "route", "method"),
    registry=REGISTRY)
CANDIDATES_SECONDS = Histogram(
    "stowage_placement_allocation_candidates_duration_seconds",
    "Time to search allocation candidates: GET /allocation_candidates (before its "
    "JSON is rendered) and the in-process scheduler's reads.", registry=REGISTRY)
CANDIDATES_RESULTS = Histogram(
    "stowage_placement_allocation_candidates_results",
    "Allocation requests found for each search (API or in-process).",
    buckets=(0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000), registry=REGISTRY)
CLAIMS = Counter(
    "stowage_scheduler_claims", "The scheduler's claims in Placement, by result: claimed, "
    "or conflict (a 409: another claim won the host; the next host is tried).",
    ("result",), registry=REGISTRY)
NO_VALID_HOST = Counter(
    "stowage_scheduler_no_valid_host", "Instances no host could take, by the filter that "
    "eliminated the last host (`Placement` when no candidate was offered), or why none "
    "was looked at: ServerGroupNotFound, DestinationNotFound, TenantAggregateRequired.",
    ("filter",), registry=REGISTRY)
OPS_STARTED = Counter(
    "stowage_conductor_operations_started", "Operations the conductor started, by type.",
    ("operation",), registry=REGISTRY)
OPS_FINISHED = Counter(
    "stowage_conductor_operations_finished", "Operations the conductor ran to their end, by "
    "type and outcome: succeeded, rolled_back (a step failed and the completed ones were "
    "undone), failed (raised out of the conductor) or lease_lost (another conductor "
    "holds its lease and carries it on; this one stopped).", ("operation", "outcome"),
    registry=REGISTRY)
OPS_RECOVERED = Counter(
    "stowage_conductor_operations_recovered", "Operations a conductor finished or undid "
    "after a crash or an expired lease cut them off, by type.", ("operation",),
    registry=REGISTRY)
OPS_SECONDS = Histogram(
    "stowage_conductor_operation_duration_seconds", "Time from an operation's start to its "
    "end in the conductor, by type and outcome.", ("operation", "outcome"), buckets=_LONG,
    registry=REGISTRY)
RPC_SECONDS = Histogram(
    "stowage_rpc_call_duration_seconds", "RabbitMQ transport: time from a call's publish to "
    "its answer (or timeout), by target kind and method.", ("target", "method"),
    buckets=_LONG, registry=REGISTRY)

_children: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *values: str) -> Any:
    """`metric.labels(*values)`, looked up once per label set."""
    key = (id(metric), *values)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*values)
    return found


class _Req(Protocol):
    method: str
    route: str


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_http: dict[tuple[str, str, str, int], tuple[Any, Any]] = {}


def http_request(service: str, req: _Req, status: int, seconds: float) -> None:
    """One request answered off a socket (`web.app.ServiceApp`). A method no route knows
    is counted as `other`, so that a client cannot make series up."""
    method = req.method if req.method in _METHODS else "other"
    key = (service, req.route, method, status)
    pair = _http.get(key)
    if pair is None:
        route = req.route or "unmatched"
        pair = _http[key] = (HTTP_REQUESTS.labels(service, route, method, str(status)),
                             HTTP_SECONDS.labels(service, route, method))
    pair[0].inc()
    pair[1].observe(seconds)


def candidates_answered(started: float, result: Any) -> None:
    """A GET /allocation_candidates searched and rendered since `started` (monotonic).
    A memoized answer is only bytes: its allocation requests are counted in them."""
    CANDIDATES_SECONDS.observe(time.monotonic() - started)
    body = getattr(result, "body", None)
    count = body.count(b'"allocations":') if body is not None else len(result.candidates)
    CANDIDATES_RESULTS.observe(count)


def claim(result: str) -> None:
    """`claimed` or `conflict`, from the scheduler's claim loop."""
    _child(CLAIMS, result).inc()


class _Rejection(Protocol):
    @property
    def filter(self) -> str: ...


def no_valid_host(rejections: Sequence[_Rejection]) -> None:
    """The scheduler gave up on an instance; the last rejection eliminated the last host."""
    name = rejections[-1].filter if rejections else "Placement"
    _child(NO_VALID_HOST, name).inc()


def no_valid_host_early(reason: str) -> None:
    """The scheduler gave up before filtering: `reason` says where (the request's group
    is gone, its destination host is unknown, its project has no required aggregate).
    One per request, as on the main path, which stops at the first instance refused."""
    _child(NO_VALID_HOST, reason).inc()


@dataclass
class OperationRun:
    """One run of an operation in this thread: whether anything was undone during it."""

    operation: str
    started: float
    undone: bool = False


_local = threading.local()


def operation_started(operation: str) -> OperationRun:
    run = OperationRun(operation, time.monotonic())
    _local.run = run
    _child(OPS_STARTED, operation).inc()
    return run


def rolled_back() -> None:
    """A step was undone (`conductor.tasks.undo`): the running operation rolls back."""
    run = getattr(_local, "run", None)
    if run is not None:
        run.undone = True


def operation_finished(run: OperationRun, error: BaseException | None = None,
                       outcome: str | None = None) -> None:
    """The run ended: `outcome` when the caller knows it (`lease_lost`: another conductor
    holds the operation's lease and finishes or undoes it), else from how it ended."""
    if outcome is None:
        outcome = "rolled_back" if run.undone else ("failed" if error is not None
                                                    else "succeeded")
    _child(OPS_FINISHED, run.operation, outcome).inc()
    _child(OPS_SECONDS, run.operation, outcome).observe(time.monotonic() - run.started)
    if getattr(_local, "run", None) is run:
        _local.run = None


def operation_recovered(operation: str) -> None:
    _child(OPS_RECOVERED, operation).inc()


def rpc_call(target: str, method: str, started: float) -> None:
    """A RabbitMQ call answered or given up since `started` (monotonic)."""
    kind = target.partition(".")[0]
    _child(RPC_SECONDS, kind, method).observe(time.monotonic() - started)
