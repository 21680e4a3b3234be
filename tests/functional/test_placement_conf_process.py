"""`stowage serve --services placement --placement-config F`: upstream's file, kept.

The operator's placement.conf names the database, the strategy and the log;
stowage serves Placement on that database, writes its log where oslo.log
would, mentions an option it does not know once, and refuses a value
Placement would refuse, before it serves anything (status 2).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.conftest import free_port
from tests.functional.processes import StowageProcess, answers_http

SERVED_BACKENDS = [b for b in ("sqlite", "postgresql") if b in BACKENDS]
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
UUID = "7c1c4f4a-7f57-4c3e-9a43-55fd0c1e0001"


def _conf(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "placement.conf"
    path.write_text(textwrap.dedent(f"""\
        [DEFAULT]
        debug = true
        log_dir = {tmp_path}
        log_file = placement-api.log

        [api]
        auth_strategy = noauth2

        [placement_database]
        connection = {url}
        max_pool_size = 5

        [placement]
        randomize_allocation_candidates = yes
        no_such_option = 1

        [profiler]
        enabled = false
        """))
    return path


@pytest.mark.parametrize("backend", SERVED_BACKENDS)
def test_serves_placement_on_the_files_database(tmp_path: Path, backend: str) -> None:
    with throwaway_database(backend) as url:
        port = free_port()
        conf = _conf(tmp_path, url)
        serve = StowageProcess("serve", ["serve", "--services", "placement",
                                         "--placement-config", str(conf),
                                         "--bind", f"127.0.0.1:{port}"],
                               tmp_path, answers_http(f"http://127.0.0.1:{port}/"))
        serve.start()
        try:
            serve.wait_ready()
            base = f"http://127.0.0.1:{port}"
            made = httpx.post(f"{base}/resource_providers", headers=HEADERS,
                              json={"name": "from-placement-conf", "uuid": UUID})
            assert made.status_code == 200, made.text
            listed = httpx.get(f"{base}/resource_providers", headers=HEADERS).json()
            assert [rp["name"] for rp in listed["resource_providers"]] == [
                "from-placement-conf"]
        finally:
            assert serve.stop() is not None
        engine = sa.create_engine(url)
        try:
            with engine.connect() as db:
                names = db.execute(sa.text("SELECT name FROM resource_providers")).scalars()
                assert list(names) == ["from-placement-conf"]
        finally:
            engine.dispose()
    stderr = serve.log()
    log = (tmp_path / "placement-api.log").read_text()
    # The unknown option: one WARNING, in the log file oslo.log's options name.
    assert log.count("unknown option [placement] no_such_option ignored") == 1, log
    assert "[placement_database] max_pool_size, [profiler] enabled" in log
    assert "DEBUG" in log  # [DEFAULT] debug
    assert '"POST /resource_providers" status: 200' in log
    assert "stowage.web.requestlog" not in stderr  # the log went to the file only


def _refused(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "placement.conf"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "stowage", "serve", "--services", "placement",
                           "--placement-config", str(path), "--bind", "127.0.0.1:1"],
                          capture_output=True, text=True, timeout=60, check=False)


def test_an_invalid_value_stops_the_start_naming_the_option(tmp_path: Path) -> None:
    result = _refused(tmp_path, "[placement_database]\nconnection = sqlite://\n\n"
                                "[placement]\nrandomize_allocation_candidates = sometimes\n")
    assert result.returncode == 2
    assert (f"stowage: cannot read {tmp_path}/placement.conf: {tmp_path}/placement.conf:5: "
            "[placement] randomize_allocation_candidates: invalid value: unexpected boolean "
            "value 'sometimes'") in result.stderr


def test_a_file_without_a_database_stops_the_start(tmp_path: Path) -> None:
    result = _refused(tmp_path, "[api]\nauth_strategy = noauth2\n")
    assert result.returncode == 2
    assert "value required for option connection in group [placement_database]" \
        in result.stderr


def test_manage_db_upgrade_reads_the_same_file(tmp_path: Path) -> None:
    """`stowage --placement-config F manage db upgrade`, as `placement-manage db sync`."""
    db = tmp_path / "placement.db"
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = sqlite:///{db}\n"
                    "[api]\nauth_strategy = noauth2\n[placement]\nrandomise = true\n")
    result = subprocess.run([sys.executable, "-m", "stowage", "--placement-config", str(conf),
                             "manage", "db", "upgrade"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "unknown option [placement] randomise ignored" in result.stderr
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            assert "resource_providers" in sa.inspect(conn).get_table_names()
    finally:
        engine.dispose()
