"""The route table decides 404 and 405 once, for every handler."""

from __future__ import annotations

import pytest

from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response
from stowage.web.routing import Route, Router


def _handler(req: Request) -> Response:
    return Response(200)


ROUTER = Router([Route("GET", "/things", _handler), Route("POST", "/things", _handler),
                 Route("GET", "/things/{uuid}/parts/{name}", _handler)])


def test_params_are_extracted() -> None:
    route, params = ROUTER.match("GET", "/things/abc/parts/CUSTOM_X")
    assert route.handler is _handler
    assert params == {"uuid": "abc", "name": "CUSTOM_X"}


def test_unknown_method_is_405_with_allow() -> None:
    with pytest.raises(HTTPError) as info:
        ROUTER.match("DELETE", "/things")
    assert info.value.status == 405
    assert info.value.headers["allow"] == "GET, POST"


@pytest.mark.parametrize("path", ["/nothing", "/things/", "/things/a/parts"])
def test_unknown_path_is_404(path: str) -> None:
    with pytest.raises(HTTPError) as info:
        ROUTER.match("GET", path)
    assert info.value.status == 404
