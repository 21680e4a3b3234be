"""The request and response values that handlers see, independent of the ASGI server.

Handlers are plain synchronous functions `handler(req) -> Response`; they run
in a worker thread so that database calls never block the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from stowage.context import RequestContext
from stowage.web.microversion import Version

__all__ = ["Request", "Response", "json_response", "empty_response"]


@dataclass
class Request:
    method: str
    path: str
    query_string: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    base_url: str  # scheme://host[:port]/<mount prefix>, no trailing slash
    root_path: str = ""  # the mount prefix alone, for root-relative links
    params: dict[str, str] = field(default_factory=dict)
    version: Version = Version(1, 0)
    context: RequestContext = field(default_factory=RequestContext)
    app: Any = None  # the service object: settings, database, policy
    # True only for requests one stowage service hands another in-process
    # (`service_client.in_process`); a request read off a socket never is.
    trusted: bool = False
    # The peer's address as the socket saw it (Keystone's `remote_addr`): what failed
    # logins are logged with; "-" for an in-process request.
    remote_addr: str = "-"
    # Set by the ASGI side once the token in the headers is accepted, before
    # the body is read (`web.app`): the pipeline does not authenticate again.
    authenticated: bool = False
    # An upload's body read off a socket, chunk by chunk as the handler asks
    # (`web.limits.UploadStream`); None for an in-process request (its body is whole).
    stream: Any = None
    # The matched route's template (`/servers/{server_id}`): what metrics label requests by.
    route: str = ""
    _query: list[tuple[str, str]] | None = None

    @property
    def query(self) -> list[tuple[str, str]]:
        if self._query is None:
            self._query = parse_qsl(self.query_string, keep_blank_values=True)
        return self._query

    def query_values(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def query_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for k, v in self.query:
            out.setdefault(k, []).append(v)
        return out

    def url(self, path: str) -> str:
        """Absolute URL, for Location headers that clients follow verbatim."""
        return self.base_url + path

    def link(self, path: str) -> str:
        """Root-relative URL, as upstream renders links in bodies."""
        return self.root_path + path


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    # A body too large to hold (image downloads): chunks read in a worker thread as
    # they are sent, then closed; the handler sets Content-Length itself.
    stream: Iterator[bytes] | None = None

    def header(self, name: str, value: str) -> Response:
        self.headers.append((name, value))
        return self

    def get_header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


def json_response(data: Any, status: int = 200,
                  headers: Sequence[tuple[str, str]] = ()) -> Response:
    body = json.dumps(data, separators=(", ", ": ")).encode()
    return Response(status, body, [("content-type", "application/json"), *headers])


def empty_response(status: int = 204, headers: Sequence[tuple[str, str]] = ()) -> Response:
    return Response(status, b"", list(headers))
