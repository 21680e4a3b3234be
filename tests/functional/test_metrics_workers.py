"""`stowage serve --workers 2`: whichever worker answers `/metrics`, the counters are both's.

The server makes its per-run directory under TMPDIR (the test's own here),
each worker writes its counters there, and a scrape sums them: every scrape
reports exactly the requests made, however they were spread over the
workers. When the server stops, the directory is gone.
"""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import httpx
import pytest
from prometheus_client.mmap_dict import MmapedDict

from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.conftest import free_port
from tests.functional.metrics_scrape import scrape, value
from tests.functional.processes import StowageProcess, answers_http

ROUTE = {"service": "placement", "route": "/resource_providers", "method": "GET",
         "status": "200"}


def _served_by(run_dir: Path) -> dict[int, float]:
    """pid -> GET /resource_providers it counted, from each worker's own counter file."""
    found: dict[int, float] = {}
    for path in run_dir.glob("counter_*.db"):
        pid = int(path.stem.split("_")[1])
        for key, count, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            _, sample, labels, _ = json.loads(key)
            if sample == "stowage_http_requests_total" and labels == ROUTE:
                found[pid] = found.get(pid, 0) + count
    return found


def _requests(url: str, count: int) -> None:
    """`count` GETs, eight at a time, each on a new connection (spread over the workers)."""
    def one(_: int) -> int:
        return httpx.get(f"{url}/resource_providers",
                         headers={"x-auth-token": "admin"}, timeout=30).status_code
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one, range(count))) == {200}


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_workers_sum_their_counters(backend: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with throwaway_database(backend) as db_url:
        server = StowageProcess("serve", ["serve", "--services", "placement", "--workers", "2",
                                          "--bind", f"127.0.0.1:{port}", "--database", db_url],
                                tmp_path, answers_http(url))
        server.start()
        try:
            server.wait_ready()
            run_dir = next(tmp_path.glob("stowage-metrics-*"))
            made = 0
            while len(_served_by(run_dir)) < 2 and made < 1000:
                _requests(url, 100)
                made += 100
            assert len(_served_by(run_dir)) == 2, "one worker took every request"
            assert sum(_served_by(run_dir).values()) == made
            for _ in range(6):  # each on a new connection: both workers answer some
                with httpx.Client(base_url=url, headers={"x-auth-token": "admin"}) as client:
                    assert value(scrape(client), "stowage_http_requests_total", **ROUTE) == made
        finally:
            assert server.stop() == 0, server.log_tail()
    assert not list(tmp_path.glob("stowage-metrics-*"))
