"""Server CPU per whole operation (boot, resize+confirm), split by component, in one process.

    python bench/ops.py [--hosts 10,1000] [--boots 20] [--pairs 20] [--backend sqlite]
        [--json FILE] [--profile FILE]

Why in one process: issue 31 asks what one boot or one resize+confirm costs
the server, polls excluded. The whole app (`build_asgi` with `--sim-hosts N`,
as `stowage serve` builds it) runs on a uvicorn thread of this process; each
operation is sent over loopback HTTP and the cast pool is then drained
(`ControlPlane.drain`) instead of polled, so no GET is counted. The client's
own thread CPU (`time.thread_time()`) is taken out of the process CPU
(`time.process_time()`): what is left is the server's.

The split is charged at the seams the services talk through, each charge
exclusive of the calls nested in it (a conductor step's Placement request is
Placement's, not the conductor's):

    API handler   the Compute ServiceApp's pipeline (`ServiceApp.respond`)
    conductor     casts to the conductor (the operation's journaled steps)
    scheduler     calls to the scheduler (its Placement requests excluded;
                  `scheduler+` below is with them: what the scheduler costs)
    agent         calls and casts to a compute agent
    placement     the Placement ServiceApp's pipeline, from whichever caller
    network       the Network ServiceApp's pipeline
    HTTP/other    the rest: uvicorn's event loop, thread hand-offs, periodic jobs

Each operation is measured on its own; medians over the operations are
printed. The scheduler is rewritten by another piece of work: its share is
printed apart so that the rest can be read without it. Ends with the
accounting audit (`stowage manage placement audit`'s); asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import move_counts  # noqa: E402
import moves  # noqa: E402
import servers  # noqa: E402

COMPONENTS = ("API handler", "conductor", "scheduler", "agent", "placement", "network",
              "HTTP/other")
# Heartbeats often enough that no host's service is seen down (60 s) while a thousand of
# them register and the operations run: their CPU is in HTTP/other, a few ms a minute.
_BEAT = 10.0
_SERVICE = {"compute": "API handler", "placement": "placement", "network": "network"}


class Meter:
    """Exclusive thread CPU per component, charged by wrappers around the service seams."""

    def __init__(self) -> None:
        self.spent: Counter[str] = Counter()
        self.scheduler_inclusive = 0.0
        self._local = threading.local()
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []
        # When profiling: one cProfile per outermost charge (cProfile sees one thread).
        self.profiling = False
        self.profiles: list[cProfile.Profile] = []

    def charge(self, component: str, func: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        profile = cProfile.Profile() if self.profiling and not stack else None
        frame = [time.thread_time(), 0.0]  # start, CPU of nested charges
        stack.append(frame)
        if profile is not None:
            profile.enable()
        try:
            return func(*args, **kw)
        finally:
            if profile is not None:
                profile.disable()
                with self._lock:
                    self.profiles.append(profile)
            stack.pop()
            took = time.thread_time() - frame[0]
            if stack:
                stack[-1][1] += took
            with self._lock:
                self.spent[component] += took - frame[1]
                if component == "scheduler":
                    self.scheduler_inclusive += took

    def install(self) -> None:
        from stowage.messaging.local import LocalTransport
        from stowage.web.app import ServiceApp

        meter = self
        respond, call, run_cast = (ServiceApp.respond, LocalTransport.call,
                                   LocalTransport._run_cast)

        def metered_respond(app: Any, req: Any) -> Any:
            return meter.charge(_SERVICE.get(app.spec.service_type, "HTTP/other"),
                                respond, app, req)

        def metered_call(transport: Any, target: str, method: str, /, **kw: Any) -> Any:
            return meter.charge(_target(target), call, transport, target, method, **kw)

        def metered_cast(target: str, method: str, func: Any, args: Any) -> None:
            meter.charge(_target(target), run_cast, target, method, func, args)

        ServiceApp.respond = metered_respond  # type: ignore[method-assign]
        LocalTransport.call = metered_call  # type: ignore[method-assign]
        LocalTransport._run_cast = staticmethod(metered_cast)  # type: ignore[method-assign]

        def undo() -> None:
            ServiceApp.respond = respond  # type: ignore[method-assign]
            LocalTransport.call = call  # type: ignore[method-assign]
            LocalTransport._run_cast = staticmethod(run_cast)  # type: ignore[method-assign]
        self._undo.append(undo)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def take(self) -> tuple[Counter[str], float]:
        with self._lock:
            spent, inclusive = self.spent, self.scheduler_inclusive
            self.spent, self.scheduler_inclusive = Counter(), 0.0
        return spent, inclusive


def _target(target: str) -> str:
    if target.startswith("compute."):
        return "agent"
    return target if target in ("conductor", "scheduler") else "HTTP/other"


class Run:
    """One measured operation at a time: process CPU less the client's, and the split."""

    def __init__(self, meter: Meter, plane: Any, profile: bool) -> None:
        self.meter, self.plane, self.profile = meter, plane, profile
        self.samples: dict[str, list[dict[str, float]]] = {}

    @contextlib.contextmanager
    def measure(self, name: str) -> Iterator[None]:
        self.meter.take()
        self.meter.profiling = self.profile
        process, mine = time.process_time(), time.thread_time()
        yield
        if not self.plane.drain(120):
            raise SystemExit("bench: the control plane did not settle")
        total = (time.process_time() - process) - (time.thread_time() - mine)
        self.meter.profiling = False
        spent, inclusive = self.meter.take()
        row = {c: spent[c] * 1000 for c in COMPONENTS[:-1]}
        row["HTTP/other"] = total * 1000 - sum(row.values())
        row["total"] = total * 1000
        row["scheduler+"] = inclusive * 1000
        self.samples.setdefault(name, []).append(row)


def _post(client: httpx.Client, path: str, body: Any, expect: int) -> httpx.Response:
    resp = client.post(path, json=body)
    if resp.status_code != expect:
        raise SystemExit(f"bench: POST {path} -> {resp.status_code} {resp.text}")
    return resp


def _settled(client: httpx.Client, server_id: str, want: str) -> None:
    view = client.get(f"/servers/{server_id}").json()["server"]
    if view["status"] != want or view["OS-EXT-STS:task_state"] is not None:
        raise SystemExit(f"bench: {server_id} is {view['status']}/"
                         f"{view['OS-EXT-STS:task_state']}, wanted {want}: {view.get('fault')}")


def _operations(client: httpx.Client, run: Run, boots: int, pairs: int,
                quota: int) -> None:
    small, large, image_id = moves.setup(client, "")
    limits = {"instances": quota, "cores": quota, "ram": quota}
    resp = client.put("/os-quota-class-sets/default", json={"quota_class_set": limits})
    if resp.status_code != 200:
        raise SystemExit(f"bench: quota class -> {resp.status_code} {resp.text}")
    flavors = ["large", "large2"]
    ids = []
    for i in range(boots + 1):  # the first warms caches: not counted
        body = {"server": {"name": f"vm{i}", "flavorRef": small, "imageRef": image_id,
                           "networks": "none"}}
        if i == 0:
            ids.append(_post(client, "/servers", body, 202).json()["server"]["id"])
            run.plane.drain(120)
        else:
            with run.measure("boot"):
                ids.append(_post(client, "/servers", body, 202).json()["server"]["id"])
        _settled(client, ids[-1], "ACTIVE")
    for i in range(pairs + 1):
        server_id = ids[i % len(ids)]
        path = f"/servers/{server_id}/action"
        flavor = flavors[(i // len(ids)) % 2]
        with run.measure("resize+confirm") if i else contextlib.nullcontext():
            _post(client, path, {"resize": {"flavorRef": flavor}}, 202)
            run.plane.drain(120)
            _post(client, path, {"confirmResize": None}, 204)
        run.plane.drain(120)
        _settled(client, server_id, "ACTIVE")


def _audit(plane: Any) -> list[str]:
    from stowage.compute.audit import audit

    return audit([db for _, db in plane.cells.distinct()], plane.placement, plane.network)


def measure(backend: str, hosts: int, boots: int, pairs: int, quota: int = -1,
            profile: str | None = None) -> dict[str, Any]:
    """Medians per operation at `hosts` hosts; `profile`: a pstats file of the server's
    threads during the measured operations."""
    meter = Meter()
    with tempfile.TemporaryDirectory() as tmp, \
            servers.database(backend, Path(tmp), "ops") as db_url:
        started = time.monotonic()
        with move_counts._app(db_url, hosts, count=False,
                                  report_interval=_BEAT) as (url, plane, _listener):
            print(f"{hosts} hosts up in {time.monotonic() - started:.0f} s", flush=True)
            meter.install()
            try:
                run = Run(meter, plane, profile is not None)
                with httpx.Client(base_url=f"{url}/compute/v2.1", headers=moves.HEADERS,
                                  timeout=120) as client:
                    _operations_with_image(client, url, run, boots, pairs, quota)
            finally:
                meter.uninstall()
            problems = _audit(plane)
    if profile is not None and meter.profiles:
        stats = pstats.Stats(meter.profiles[0])
        for more in meter.profiles[1:]:
            stats.add(more)
        stats.dump_stats(profile)
    result = {name: _medians(rows) for name, rows in run.samples.items()}
    result["audit_problems"] = problems
    return result


def _operations_with_image(client: httpx.Client, url: str, run: Run, boots: int,
                           pairs: int, quota: int) -> None:
    """`moves.setup` takes the Image API's URL: this process serves it under /image."""
    original = moves.setup

    def setup(c: httpx.Client, _image: str) -> tuple[str, str, str]:
        return original(c, f"{url}/image")
    moves.setup = setup  # type: ignore[assignment]
    try:
        _operations(client, run, boots, pairs, quota)
    finally:
        moves.setup = original  # type: ignore[assignment]


def _medians(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]} | {"n": len(rows)}


def report(hosts: int, result: dict[str, Any], quota: int) -> None:
    print(f"server CPU per operation at {hosts} hosts, quota {quota} "
          "(ms, medians; polls excluded):")
    print(f"  {'operation':<16}{'total':>7}{'w/o sched':>10}" +
          "".join(f"{c:>12}" for c in COMPONENTS) + f"{'scheduler+':>12}")
    for name in ("boot", "resize+confirm"):
        row = result.get(name)
        if row is None:
            continue
        print(f"  {name:<16}{row['total']:7.1f}{row['total'] - row['scheduler+']:10.1f}" +
              "".join(f"{row[c]:12.1f}" for c in COMPONENTS) + f"{row['scheduler+']:12.1f}")
    problems = result["audit_problems"]
    print(f"  audit: {len(problems)} problem(s)" + "".join(f"\n    {p}" for p in problems),
          flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="10,1000", help="comma-separated host counts")
    p.add_argument("--boots", type=int, default=20)
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--backend", default="sqlite")
    p.add_argument("--quota", type=int, default=-1,
                   help="the default quota class's instances, cores and ram (-1: unlimited, "
                        "so nothing is counted; e.g. 1000000 to count usage on every check)")
    p.add_argument("--json", help="write the medians to this file")
    p.add_argument("--profile", help="cProfile the measured operations into this file "
                   "(the first host count only)")
    args = p.parse_args(argv)
    results = {}
    for i, hosts in enumerate(int(h) for h in args.hosts.split(",")):
        results[hosts] = measure(args.backend, hosts, args.boots, args.pairs, args.quota,
                                 args.profile if i == 0 else None)
        report(hosts, results[hosts], args.quota)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
