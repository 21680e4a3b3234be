"""Declarative routes: one table maps path + method to a handler.

Unknown paths are 404 and known paths with an unknown method are 405 with an
``Allow`` header, decided here once rather than in each handler. A path
holding a NUL character (``%00``) names nothing that can exist: 404 for every
route, before any handler hands it to a database that cannot compare it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response

__all__ = ["Route", "Router", "Handler", "routes_of"]

Handler = Callable[[Request], Response]
_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    # Microversion (minor of 1.x) below which the route does not exist (404).
    min_version: int = 0
    # Whether the request must carry a JSON body (415 otherwise).
    json_body: bool = False
    # The body is data to count, not to hold (image uploads): `web.limits`.
    upload: bool = False


def routes_of(package: str, modules: Iterable[str]) -> list[Route]:
    """Concatenate the `ROUTES` of each handler module of `package`, in the given order."""
    routes: list[Route] = []
    for name in modules:
        routes.extend(importlib.import_module(f"{package}.{name}").ROUTES)
    return routes


class Router:
    def __init__(self, routes: Iterable[Route]) -> None:
        self._by_pattern: dict[str, dict[str, Route]] = {}
        for route in routes:
            self._by_pattern.setdefault(route.path, {})[route.method] = route
        self._compiled = [
            (re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", re.escape(p).replace(r"\{", "{")
                                        .replace(r"\}", "}")) + "$"), methods)
            for p, methods in self._by_pattern.items()
        ]

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        if "\x00" in path:
            raise HTTPError(404, "The resource could not be found.")
        for regex, methods in self._compiled:
            found = regex.match(path)
            if not found:
                continue
            route = methods.get(method)
            if route is None:
                allowed = ", ".join(methods)
                raise HTTPError(405, f"The method {method} is not allowed for this resource.",
                                headers={"allow": allowed})
            return route, found.groupdict()
        raise HTTPError(404, "The resource could not be found.")
