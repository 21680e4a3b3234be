"""What compute uses to talk to Placement: one client, over HTTP or in-process.

Both ways speak the Placement API itself (latest microversion, admin token),
so the compute side is tested against exactly what a remote Placement would
answer. `PlacementClient.local` hands each request straight to the placement
ServiceApp in this process (its whole pipeline: auth, microversion, routing,
schemas), without building HTTP messages: a request is a `Request`, an
answer the app's `Response`. `PlacementClient.over_http` goes through a real
socket. `LocalTransport` is the same in-process hand-over as an httpx
transport, for callers that want an httpx client.

Consumer and provider generations are the caller's business for claims (a
stale one is a `PlacementConflict`); provider-side writes that the API lets
us retry (inventories, traits, aggregates) re-read the generation and retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from stowage.web.http import Request
from stowage.web.service_client import (
    Answer,
    Send,
    close_send,
    in_process,
    over_http,
    served_app,
)
from stowage.web.service_clients import PLACEMENT, ServiceClients

__all__ = ["PlacementClient", "PlacementError", "PlacementConflict", "LocalTransport",
           "Holding", "MICROVERSION"]

MICROVERSION = "1.39"
_RETRIES = 5
_CONCURRENT_UPDATE = "placement.concurrent_update"


class PlacementError(Exception):
    def __init__(self, status: int, code: str | None, detail: str) -> None:
        super().__init__(f"placement {status} {code or ''}: {detail}".strip())
        self.status = status
        self.code = code
        self.detail = detail


class PlacementConflict(PlacementError):
    """409: a stale generation, too little capacity, or an in-use inventory."""

    @property
    def stale(self) -> bool:
        """A generation (consumer's or provider's) changed: the write may be tried again."""
        return self.code == _CONCURRENT_UPDATE


@dataclass
class Holding:
    """What one consumer holds: provider uuid -> resource class -> amount."""

    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    generation: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None


class LocalTransport(httpx.BaseTransport):
    """An httpx transport that runs the request through an in-process ServiceApp."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        req = Request(method=request.method, path=request.url.path or "/",
                      query_string=request.url.query.decode("latin-1"), headers=headers,
                      body=request.read(), base_url="http://placement.local", app=self.app.state,
                      trusted=True)
        resp = self.app.respond(req)
        return httpx.Response(resp.status, headers=resp.headers, content=resp.body)


def _error(status: int, body: bytes) -> PlacementError:
    try:
        err = json.loads(body)["errors"][0]
        code, detail = err.get("code"), err.get("detail", body.decode(errors="replace"))
    except (ValueError, KeyError, IndexError, TypeError):
        code, detail = None, body.decode(errors="replace")
    cls = PlacementConflict if status == 409 else PlacementError
    return cls(status, code, detail)


class PlacementClient:
    """Placement calls the resource tracker, scheduler and conductor need."""

    def __init__(self, http: httpx.Client | None = None, send: Send | None = None) -> None:
        self.http = http
        if send is None:
            assert http is not None, "an httpx client or a send function"
            send = over_http(http)
        self._transport = send

    @classmethod
    def local(cls, app: Any) -> PlacementClient:
        return cls(send=in_process(app, _headers(), "http://placement.local"))

    @classmethod
    def connect(cls, clients: ServiceClients, app: Any = None) -> PlacementClient | None:
        """Placement as the factory reaches it: in-process (`app`), as a service user, or at
        `[compute] placement_url`; None when none of them is configured."""
        send = clients.send(PLACEMENT, _headers(), app)
        return None if send is None else cls(send=send)

    @classmethod
    def over_http(cls, url: str, timeout: float = 30.0,
                  auth: httpx.Auth | None = None) -> PlacementClient:
        """`auth` (if given) replaces the admin token, e.g. a builtin-identity service token."""
        return cls(httpx.Client(base_url=url.rstrip("/"), headers=_headers(), timeout=timeout,
                                auth=auth))

    def served_app(self) -> Any:
        """The Placement app of this process that requests go to in-process, else None."""
        return served_app(self._transport)

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
        else:
            close_send(self._transport)

    def _send(self, method: str, path: str, body: Any = None,
              params: Sequence[tuple[str, str]] | None = None,
              ok: Sequence[int] = (200, 201, 204)) -> Answer:
        # orjson: several times faster than json for these bodies, on every claim and move.
        content = None if body is None else orjson.dumps(body)
        resp = self._transport(method, path, content, params)
        if resp.status not in ok:
            raise _error(resp.status, resp.body)
        return resp

    # --- providers -----------------------------------------------------------
    def provider(self, uuid: str) -> dict[str, Any] | None:
        resp = self._send("GET", f"/resource_providers/{uuid}", ok=(200, 404))
        return None if resp.status == 404 else dict(resp.json())

    def ensure_provider(self, uuid: str, name: str,
                        parent_uuid: str | None = None) -> dict[str, Any]:
        """The provider, created when missing (a racing creator's 409 is fine)."""
        found = self.provider(uuid)
        if found is not None:
            return found
        body: dict[str, Any] = {"uuid": uuid, "name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        resp = self._send("POST", "/resource_providers", body, ok=(200, 409))
        if resp.status == 409:
            found = self.provider(uuid)
            if found is None:
                raise _error(resp.status, resp.body)
            return found
        return dict(resp.json())

    def providers(self, in_tree: str | None = None) -> list[dict[str, Any]]:
        """Every provider, or those of the tree holding `in_tree` (none if it is unknown)."""
        params = None if in_tree is None else [("in_tree", in_tree)]
        return list(self._send("GET", "/resource_providers", params=params)
                    .json()["resource_providers"])

    def provider_part(self, uuid: str, part: str) -> Any:
        """One sub-resource's content: `inventories`, `traits` or `aggregates`."""
        return self._send("GET", f"/resource_providers/{uuid}/{part}").json()[part]

    def delete_provider(self, uuid: str) -> None:
        self._send("DELETE", f"/resource_providers/{uuid}", ok=(204, 404))

    def _retry_generation(self, uuid: str, path: str, key: str, value: Any) -> dict[str, Any]:
        for _ in range(_RETRIES):
            provider = self.provider(uuid)
            if provider is None:
                raise PlacementError(404, None, f"no resource provider {uuid}")
            body = {"resource_provider_generation": provider["generation"], key: value}
            resp = self._send("PUT", f"/resource_providers/{uuid}/{path}", body, ok=(200, 409))
            if resp.status == 200:
                return dict(resp.json())
            if _error(resp.status, resp.body).code != _CONCURRENT_UPDATE:
                raise _error(resp.status, resp.body)
        raise _error(resp.status, resp.body)

    def set_inventories(self, uuid: str, inventories: Mapping[str, Mapping[str, Any]]
                        ) -> dict[str, Any]:
        return self._retry_generation(uuid, "inventories", "inventories", dict(inventories))

    def set_traits(self, uuid: str, traits: Sequence[str]) -> dict[str, Any]:
        for name in traits:
            if name.startswith("CUSTOM_"):
                self._send("PUT", f"/traits/{name}", ok=(201, 204))
        return self._retry_generation(uuid, "traits", "traits", sorted(set(traits)))

    def set_aggregates(self, uuid: str, aggregates: Sequence[str]) -> dict[str, Any]:
        return self._retry_generation(uuid, "aggregates", "aggregates", sorted(set(aggregates)))

    def change_aggregates(self, uuid: str, add: Sequence[str] = (),
                          drop: Sequence[str] = ()) -> list[str]:
        """Add and drop some of a provider's aggregates, keeping the others.

        Read-modify-write at the generation read, re-read on a generation
        conflict (Nova's report client retries its aggregate_add_host the same
        way): a concurrent writer's aggregates are never lost.
        """
        for _ in range(_RETRIES):
            current = self._send("GET", f"/resource_providers/{uuid}/aggregates").json()
            have = set(current["aggregates"])
            wanted = (have | set(add)) - set(drop)
            if wanted == have:
                return sorted(have)
            body = {"resource_provider_generation": current["resource_provider_generation"],
                    "aggregates": sorted(wanted)}
            resp = self._send("PUT", f"/resource_providers/{uuid}/aggregates", body,
                              ok=(200, 409))
            if resp.status == 200:
                return sorted(wanted)
            if _error(resp.status, resp.body).code != _CONCURRENT_UPDATE:
                raise _error(resp.status, resp.body)
        raise _error(resp.status, resp.body)

    def ensure_resource_class(self, name: str) -> None:
        self._send("PUT", f"/resource_classes/{name}", ok=(201, 204))

    def usages(self, uuid: str) -> dict[str, int]:
        return dict(self._send("GET", f"/resource_providers/{uuid}/usages").json()["usages"])

    def project_usages(self, project_id: str, user_id: str | None = None
                       ) -> dict[str, dict[str, int]]:
        """consumer type -> resource class -> amount the project (or its user) holds (1.38)."""
        params = [("project_id", project_id)] + ([("user_id", user_id)] if user_id else [])
        groups = self._send("GET", "/usages", params=params).json()["usages"]
        return {kind: {rc: int(n) for rc, n in used.items() if rc != "consumer_count"}
                for kind, used in groups.items()}

    def provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """consumer uuid -> resource class -> amount, on one provider."""
        data = self._send("GET", f"/resource_providers/{uuid}/allocations").json()
        return {c: dict(a["resources"]) for c, a in data["allocations"].items()}

    # --- candidates and allocations -------------------------------------------
    def allocation_candidates(self, params: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return dict(self._send("GET", "/allocation_candidates", params=params).json())

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes:
        """The answer's JSON bytes, unparsed: the scheduler decodes only what it reads."""
        return self._send("GET", "/allocation_candidates", params=params).body

    def holding(self, consumer: str) -> Holding:
        data = self._send("GET", f"/allocations/{consumer}").json()
        allocs = {rp: dict(a["resources"]) for rp, a in data["allocations"].items()}
        return Holding(allocs, data.get("consumer_generation"), data.get("project_id"),
                       data.get("user_id"), data.get("consumer_type"))

    def claim(self, consumer: str, allocations: Mapping[str, Mapping[str, int]],
              project_id: str, user_id: str, consumer_generation: int | None,
              consumer_type: str = "INSTANCE") -> None:
        """PUT the consumer's whole allocation; 409 (stale or full) raises PlacementConflict."""
        body = {"allocations": {rp: {"resources": dict(res)} for rp, res in allocations.items()},
                "project_id": project_id, "user_id": user_id,
                "consumer_generation": consumer_generation, "consumer_type": consumer_type}
        self._send("PUT", f"/allocations/{consumer}", body)

    def write_many(self, holdings: Mapping[str, Holding]) -> None:
        """One atomic `POST /allocations` for several consumers (empty = drop all)."""
        body = {}
        for consumer, h in holdings.items():
            body[consumer] = {
                "allocations": {rp: {"resources": dict(res)} for rp, res in h.allocations.items()},
                "project_id": h.project_id, "user_id": h.user_id,
                "consumer_generation": h.generation,
                "consumer_type": h.consumer_type or "INSTANCE"}
        self._send("POST", "/allocations", body)

    def delete_allocations(self, consumer: str) -> bool:
        """Drop everything the consumer holds; False when it held nothing (404)."""
        return self._send("DELETE", f"/allocations/{consumer}", ok=(204, 404)).status == 204


def _headers() -> dict[str, str]:
    return {"x-auth-token": "admin", "accept": "application/json",
            "openstack-api-version": f"placement {MICROVERSION}"}
