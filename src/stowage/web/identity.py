"""A stand-in Identity v3 version document, so stock clients work without Keystone.

`openstack server list` and friends insist on discovering an identity v3
endpoint even when they never call it; this answers discovery and the two
lookups (`projects/{id}`, `users/{id}`) that name resolution sends.
"""

from __future__ import annotations

import json
from typing import Any

from stowage.web.app import Receive, Scope, Send

__all__ = ["IdentityStub"]


class IdentityStub:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        base = f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}"
        root = scope.get("root_path", "")
        parts = [p for p in scope["path"].split("/") if p]
        status, body = self._answer(parts, f"{base}{root}")
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    @staticmethod
    def _answer(parts: list[str], base: str) -> tuple[int, Any]:
        version = {"id": "v3.14", "status": "stable", "updated": "2020-01-01T00:00:00Z",
                   "links": [{"rel": "self", "href": f"{base}/v3/"}],
                   "media-types": [{"base": "application/json",
                                    "type": "application/vnd.openstack.identity-v3+json"}]}
        if not parts:
            return 300, {"versions": {"values": [version]}}
        if parts == ["v3"]:
            return 200, {"version": version}
        if len(parts) == 3 and parts[0] == "v3" and parts[1] in ("projects", "users"):
            kind = parts[1][:-1]
            return 200, {kind: {"id": parts[2], "name": parts[2], "enabled": True,
                                "domain_id": "default"}}
        return 404, {"error": {"code": 404, "title": "Not Found",
                               "message": "The identity stand-in only answers discovery."}}
