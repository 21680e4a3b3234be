"""`[metrics]`: its settings refuse what they cannot use; the access rule reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stowage import config
from stowage.context import RequestContext
from stowage.metrics.endpoint import Access
from stowage.web.http import Request


def _load(tmp_path: Path, text: str) -> config.Settings:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return config.load(str(path))


def test_metrics_table_is_read(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[metrics]\nallow_unauthenticated_from = ["10.1.0.0/16"]\n'
                               'audit_interval = 0\nworker_bind = "0.0.0.0:9780"\n')
    assert settings.metrics == config.MetricsSettings(("10.1.0.0/16",), 0, "0.0.0.0:9780")


@pytest.mark.parametrize("line, why", [
    ('allow_unauthenticated_from = ["lan"]', "allow_unauthenticated_from"),
    ("audit_interval = -1", "audit_interval"),
    ('worker_bind = "somewhere"', "worker_bind"),
    ("interval = 3", "unknown setting(s) in [metrics]"),
])
def test_mistakes_are_refused_by_name(tmp_path: Path, line: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        _load(tmp_path, f"[metrics]\n{line}\n")


def _req(addr: str, token: str | None = None) -> Request:
    headers = {"x-auth-token": token} if token else {}
    return Request("GET", "/", "", headers, b"", "", remote_addr=addr)


def _auth(req: Request) -> RequestContext | None:
    token = req.headers.get("x-auth-token")
    if token is None:
        return None
    return RequestContext(user_id=token, roles=("admin",) if token == "admin" else ())


def test_networks_let_in_their_clients_only() -> None:
    settings = config.Settings(metrics=config.MetricsSettings(
        allow_unauthenticated_from=("10.1.0.0/16", "fd00::/8")))
    access = Access.of(settings, _auth)
    assert access.refusal(_req("10.1.2.3")) is None
    assert access.refusal(_req("fd00::5")) is None
    refused = access.refusal(_req("10.2.0.1"))
    assert refused is not None and refused.status == 401
    refused = access.refusal(_req("10.2.0.1", "demo"))
    assert refused is not None and refused.status == 403
    assert access.refusal(_req("10.2.0.1", "admin")) is None
    refused = access.refusal(_req("-"))  # an in-process request has no address
    assert refused is not None and refused.status == 401
