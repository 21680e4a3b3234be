"""The pieces of a small running cloud whose Placement is swapped (test_swap_placement.py).

- `placement_conf`: the placement.conf the cloud's Placement was deployed
  with (`auth_strategy = keystone`, a `[keystone_authtoken]` for the
  `placement` service user), kept for stowage;
- `UpstreamPlacement`: stock Placement 16.0.0 served by gunicorn from
  `.venv-upstream` with that file (`OS_PLACEMENT_CONFIG_DIR`), as a
  deployment's WSGI server runs it, in a process group of its own;
- `Cloud.osc`: the stock `openstack` CLI as Keystone's admin with password
  auth, endpoints from the catalog of the cloud's region;
- `stowage`: a `python -m stowage ...` command run to its end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from bench import upstream_venv

from tests.functional.osc import _command
from tests.functional.processes import SRC
from tests.keystone.fixture import Keystone
from tests.keystone.server import _die_with_parent

__all__ = ["Cloud", "UpstreamPlacement", "placement_conf", "register_placement",
           "set_connection", "stowage"]

PLACEMENT_PASSWORD = "swap-placement-pw"


def placement_conf(path: Path, keystone: Keystone, connection: str) -> None:
    """The cloud's placement.conf, in the shape DevStack writes it."""
    path.write_text(f"""\
[DEFAULT]
debug = False

[api]
auth_strategy = keystone

[placement_database]
connection = {connection}

[keystone_authtoken]
www_authenticate_uri = {keystone.auth_url}
auth_url = {keystone.auth_url}
auth_type = password
username = placement
password = {PLACEMENT_PASSWORD}
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = {keystone.region}
service_token_roles_required = True
cafile =

[placement]
randomize_allocation_candidates = False
""")


def register_placement(keystone: Keystone, url: str) -> list[str]:
    """The cloud's set-up, as DevStack's lib/placement makes it through Keystone's API:
    the `placement` service user (admin and service on project `service`), the
    `placement` service and its public and internal endpoints at `url` (moved there
    if a previous deployment left them). Returns the endpoints' ids."""
    admin = keystone.admin

    def call(method: str, path: str, **kwargs: Any) -> Any:
        resp = admin.session.request(admin.auth_url + path, method, **kwargs)
        return resp.json() if resp.content else None

    def one(kind: str, query: str, body: dict[str, Any]) -> str:
        found = call("GET", f"/{kind}s?{query}")[f"{kind}s"]
        if found:
            return str(found[0]["id"])
        return str(call("POST", f"/{kind}s", json={kind: body})[kind]["id"])

    project = one("project", "name=service&domain_id=default",
                  {"name": "service", "domain_id": "default"})
    user = one("user", "name=placement&domain_id=default",
               {"name": "placement", "domain_id": "default"})
    call("PATCH", f"/users/{user}", json={"user": {"password": PLACEMENT_PASSWORD}})
    for role in ("admin", "service"):
        admin.grant(user, role, project_id=project)
    service = one("service", "type=placement", {"name": "placement", "type": "placement"})
    ids = []
    for interface in ("public", "internal"):
        found = call("GET", f"/endpoints?service_id={service}&interface={interface}"
                            f"&region_id={keystone.region}")["endpoints"]
        body = {"service_id": service, "interface": interface, "url": url,
                "region_id": keystone.region}
        if found:
            call("PATCH", f"/endpoints/{found[0]['id']}", json={"endpoint": body})
            ids.append(str(found[0]["id"]))
        else:
            ids.append(str(call("POST", "/endpoints", json={"endpoint": body})
                           ["endpoint"]["id"]))
    return ids


def set_connection(path: Path, connection: str) -> None:
    """Edit `[placement_database] connection` in place, as an operator would."""
    lines = [f"connection = {connection}" if line.startswith("connection =") else line
             for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


@dataclass
class UpstreamPlacement:
    """`gunicorn placement.wsgi.api:application` with `conf_dir`/placement.conf."""

    conf_dir: Path
    port: int
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> UpstreamPlacement:
        venv = upstream_venv.ensure()
        env = {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(self.conf_dir)}
        env.pop("PYTHONPATH", None)
        with open(self.conf_dir / "upstream.log", "ab") as log:
            self._proc = subprocess.Popen(
                [str(venv / "bin" / "gunicorn"), "-w", "1", "-b", f"127.0.0.1:{self.port}",
                 "--timeout", "120", "placement.wsgi.api:application"],
                env=env, cwd=self.conf_dir, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        log_text = (self.conf_dir / "upstream.log").read_text(errors="replace")
        self.stop()
        raise RuntimeError(f"upstream Placement did not start:\n{log_text[-3000:]}")

    def stop(self) -> None:
        """SIGTERM to gunicorn's group: the master stops its workers, then itself."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class Cloud:
    """The `openstack` CLI against the cloud, as its operator (Keystone's admin)."""

    keystone: Keystone

    def osc(self, *args: str, json_out: bool = True, version: str = "1.39") -> Any:
        """One command at Placement microversion `version`; its parsed `-f json`."""
        keystone = self.keystone
        env = {"OS_AUTH_URL": keystone.auth_url, "OS_AUTH_TYPE": "password",
               "OS_USERNAME": keystone.admin_username,
               "OS_PASSWORD": keystone.admin_password,
               "OS_PROJECT_NAME": keystone.admin_project, "OS_USER_DOMAIN_NAME": "Default",
               "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": keystone.region,
               "OS_IDENTITY_API_VERSION": "3", "OS_INTERFACE": "public",
               "OS_PLACEMENT_API_VERSION": version}
        argv = [*args] + (["-f", "json"] if json_out else [])
        rc, stdout, stderr = _command(argv, env)
        assert rc == 0, f"openstack {' '.join(argv)}\n{stdout}\n{stderr}"
        return json.loads(stdout) if json_out and stdout.strip() else None


def stowage(*args: str, status: int = 0) -> subprocess.CompletedProcess[str]:
    """`python -m stowage args` to its end; fails the test with its output unless it
    exits with `status`."""
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("STOWAGE_DATABASE", None)
    done = subprocess.run([sys.executable, "-m", "stowage", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == status, f"stowage {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done
