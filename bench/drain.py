"""The drain planner's and the capacity report's cost, and a whole drain's wall time.

    python bench/drain.py [--hosts 50] [--servers 40] [--repeats 5] [--parallel 2]

A real `stowage serve --hosts-file` process on SQLite: host0 (big) takes
`--servers` servers (m1.small and m1.medium alternating) while the other
`--hosts` hosts (8 VCPU, 8 GB, 80 GB, ratio 1) are disabled; then they are
enabled. Prints the median wall time of `GET /os-stowage-drain/host0`
(every server planned through the scheduler, each claim counted for the next)
and of `GET /os-stowage-capacity` over `--repeats` calls, the CPU the server
process spent per call, then the wall time of `stowage manage host drain
host0` with `--parallel` moves at once (the moves themselves: live
migrations through the conductor). Asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import httpx  # noqa: E402

from stowage.compute.drain.execute import DrainRun  # noqa: E402
from stowage.compute.drain.progress import Progress  # noqa: E402


def _hosts_file(path: Path, hosts: int) -> None:
    lines = ['[[hosts]]\nname = "host0"\nvcpus = 256\nmemory_mb = 262144\ndisk_gb = 4000\n']
    for i in range(1, hosts + 1):
        lines.append(f'[[hosts]]\nname = "host{i}"\nvcpus = 8\nmemory_mb = 8192\n'
                     'disk_gb = 80\ncpu_allocation_ratio = 1.0\nram_allocation_ratio = 1.0\n')
    path.write_text("\n".join(lines), encoding="utf-8")


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _call(client: httpx.Client, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    resp = client.request(method, path, json=body)
    return resp.status_code, resp.json() if resp.content else None


def _world(c: httpx.Client, base: str, servers: int) -> None:
    compute = {s["host"]: s["id"] for s in c.get("/os-services").json()["services"]
               if s["binary"] == "nova-compute"}
    for host, sid in compute.items():
        if host != "host0":
            c.put(f"/os-services/{sid}", json={"status": "disabled"})
    # noauth2's "admin" token is project "admin": no quota in the way of the servers.
    c.put("/os-quota-sets/admin", json={"quota_set": {"instances": -1, "cores": -1,
                                                       "ram": -1}})
    flavors = [c.post("/flavors", json={"flavor": {"name": n, "vcpus": v, "ram": r, "disk": d}})
               .json()["flavor"]["id"] for n, v, r, d in (("s", 1, 512, 5), ("m", 2, 2048, 20))]
    img = httpx.Client(base_url=f"{base}/image", headers={"x-auth-token": "admin"})
    iid = img.post("/v2/images", json={"name": "i", "disk_format": "qcow2",
                                       "container_format": "bare"}).json()["id"]
    img.put(f"/v2/images/{iid}/file", content=b"x",
            headers={"content-type": "application/octet-stream"})
    ids = [c.post("/servers", json={"server": {
        "name": f"vm{i}", "flavorRef": flavors[i % 2], "imageRef": iid, "networks": "none"}})
        .json()["server"]["id"] for i in range(servers)]
    for sid in ids:
        while c.get(f"/servers/{sid}").json()["server"]["status"] != "ACTIVE":
            time.sleep(0.05)
    for host, sid in compute.items():
        if host != "host0":
            c.put(f"/os-services/{sid}", json={"status": "enabled"})


def _timed(c: httpx.Client, pid: int, path: str, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = _cpu(pid), time.perf_counter()
        assert c.get(path).status_code == 200
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu(pid) - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--servers", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hosts = Path(tmp) / "hosts.toml"
        _hosts_file(hosts, args.hosts)
        port = 18000 + os.getpid() % 1000
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([sys.executable, "-m", "stowage", "serve", "--hosts-file",
                                 str(hosts), "--database", f"sqlite:///{tmp}/db.sqlite",
                                 "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
                                env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            c = httpx.Client(base_url=f"{base}/compute/v2.1", timeout=120, headers={
                "x-auth-token": "admin", "openstack-api-version": "compute latest"})
            deadline = time.monotonic() + 120
            while True:
                try:
                    services = c.get("/os-services").json()["services"]
                    if len([s for s in services if s["binary"] == "nova-compute"]) \
                            == args.hosts + 1:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
            _world(c, base, args.servers)
            print(f"{args.servers} servers on host0, {args.hosts} other hosts")
            for name, path in (("drain plan", "/os-stowage-drain/host0"),
                               ("capacity (2 flavors)", "/os-stowage-capacity")):
                wall, cpu = _timed(c, proc.pid, path, args.repeats)
                print(f"  {name:22} median wall {wall * 1000:7.1f} ms, "
                      f"server CPU {cpu * 1000:7.1f} ms")
            start = time.perf_counter()
            outcomes = DrainRun(lambda m, p, b=None: _call(c, m, p, b), "host0",
                                Progress(io.StringIO()), max_parallel=args.parallel,
                                poll=0.05).run()
            took = time.perf_counter() - start
            moved = sum(1 for o in outcomes.values() if o.result == "moved")
            print(f"  drain --max-parallel {args.parallel}: {moved}/{len(outcomes)} moved in "
                  f"{took:.1f} s ({took / max(moved, 1):.2f} s per server)")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
