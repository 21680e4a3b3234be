"""`stowage serve`'s uvicorn options and open-files limit (web/server.py)."""

from __future__ import annotations

import pickle
import resource

import pytest

from stowage import config
from stowage.web.server import (
    SPARE_FILES,
    HeaderDeadlineProtocol,
    raise_open_files_limit,
    uvicorn_options,
)


def test_options_carry_the_api_settings_and_survive_pickling() -> None:
    api = config.ApiSettings(header_timeout=3, max_connections=7, max_header_size=9000,
                             keepalive_timeout=11)
    options = uvicorn_options(api)
    assert {k: options[k] for k in ("timeout_keep_alive", "limit_concurrency",
                                    "h11_max_incomplete_event_size")} == {
        "timeout_keep_alive": 11, "limit_concurrency": 7, "h11_max_incomplete_event_size": 9000}
    # `serve --workers N` hands uvicorn's config to spawned workers by pickling it.
    protocol = pickle.loads(pickle.dumps(options["http"]))
    assert protocol.func is HeaderDeadlineProtocol
    assert protocol.keywords == {"header_timeout": 3}


@pytest.mark.parametrize(("soft", "hard", "raised", "warned"), [
    (1024, 65536, 1000 + SPARE_FILES, False),
    (1024, 1100, 1100, True),
    (1024, resource.RLIM_INFINITY, 1000 + SPARE_FILES, False),
    (4096, 65536, None, False),
])
def test_open_files_limit_is_raised_toward_the_hard_limit(
        monkeypatch: pytest.MonkeyPatch, soft: int, hard: int, raised: int | None,
        warned: bool) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft, hard))
    monkeypatch.setattr(resource, "setrlimit", lambda _which, limits: calls.append(limits))
    warning = raise_open_files_limit(config.ApiSettings(max_connections=1000))
    assert calls == ([] if raised is None else [(raised, hard)])
    assert (warning is not None) == warned
