"""What compute uses to talk to the Network service: one client, over HTTP or in-process.

Like `placement.client`, it speaks the Networking API itself with an admin
token (Nova's `[neutron]` service user), so that compute sees exactly what a
remote Neutron-compatible service would answer: `NetworkClient.local` hands
each request to the network ServiceApp of this process, `over_http` goes
through a socket (`[compute] network_url`).

The operations are the ones Nova's `network/neutron.py` makes for servers:
show and list ports, create a port on a network (Nova creates the port of a
`{"uuid": net}` request), update a port's device and binding attributes,
delete a port Nova created, the project's port quota (Nova's
`validate_networks`), networks and subnets for the choice of a default
network, the security groups behind Nova's os-security-groups proxy and a
server's groups, the multiple-bindings calls (`/ports/{id}/bindings`)
a live migration makes, and the floating IPs behind Nova's os-floating-ips
proxy and a server's floating addresses (`/floatingips`). A non-2xx answer
raises `NetworkError` with Neutron's error type (`PortNotFound`, ...); a 404 on
a read is None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from stowage.web.service_client import Answer, Send, close_send, in_process, over_http
from stowage.web.service_clients import NETWORK, ServiceClients

__all__ = ["NetworkClient", "NetworkError"]

_HEADERS = {"x-auth-token": "admin", "accept": "application/json"}


class NetworkError(Exception):
    """A refusal of the Network service: its status, Neutron's error type and message."""

    def __init__(self, status: int, error_type: str | None, message: str) -> None:
        super().__init__(f"network {status} {error_type or ''}: {message}".strip())
        self.status = status
        self.type = error_type
        self.message = message


def _error(answer: Answer) -> NetworkError:
    try:
        body = answer.json()["NeutronError"]
        return NetworkError(answer.status, body.get("type"), str(body.get("message")))
    except (ValueError, KeyError, TypeError):
        return NetworkError(answer.status, None, answer.body.decode(errors="replace"))


class NetworkClient:
    """The Networking API calls compute makes; the constructor does no I/O."""

    def __init__(self, send: Send, http: httpx.Client | None = None) -> None:
        self._transport = send
        self.http = http

    @classmethod
    def local(cls, app: Any) -> NetworkClient:
        return cls(in_process(app, _HEADERS, "http://network.local"))

    @classmethod
    def connect(cls, clients: ServiceClients, app: Any = None) -> NetworkClient | None:
        """The Network service as the factory reaches it: in-process (`app`), as a service
        user, or at `[compute] network_url`; None when none of them is configured."""
        send = clients.send(NETWORK, _HEADERS, app)
        return None if send is None else cls(send)

    @classmethod
    def over_http(cls, url: str, timeout: float = 30.0,
                  auth: httpx.Auth | None = None) -> NetworkClient:
        """`auth` (if given) replaces the admin token, e.g. a builtin-identity service token."""
        http = httpx.Client(base_url=url.rstrip("/"), headers=_HEADERS, timeout=timeout,
                            auth=auth)
        return cls(over_http(http), http)

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
        else:
            close_send(self._transport)

    def _send(self, method: str, path: str, body: Any = None,
              params: Sequence[tuple[str, str]] | None = None,
              ok: Sequence[int] = (200, 201, 204)) -> Answer:
        content = None if body is None else json.dumps(body).encode()
        answer = self._transport(method, f"/v2.0{path}", content, params)
        if answer.status not in ok:
            raise _error(answer)
        return answer

    # --- ports ------------------------------------------------------------------
    def show_port(self, port_id: str) -> dict[str, Any] | None:
        answer = self._send("GET", f"/ports/{port_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["port"])

    def list_ports(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        return list(self._send("GET", "/ports", params=_query(filters)).json()["ports"])

    def create_port(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", "/ports", {"port": dict(values)}).json()["port"])

    def update_port(self, port_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("PUT", f"/ports/{port_id}", {"port": dict(values)})
                    .json()["port"])

    def delete_port(self, port_id: str) -> bool:
        """False when the port was gone already."""
        return self._send("DELETE", f"/ports/{port_id}", ok=(204, 404)).status == 204

    # --- quotas ------------------------------------------------------------------------
    def show_quota(self, project_id: str) -> dict[str, int] | None:
        """The project's limits (`GET /quotas/{project}`); None where no quota API answers."""
        answer = self._send("GET", f"/quotas/{project_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["quota"])

    # --- networks and subnets ------------------------------------------------------
    def show_network(self, network_id: str) -> dict[str, Any] | None:
        answer = self._send("GET", f"/networks/{network_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["network"])

    def list_networks(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        return list(self._send("GET", "/networks", params=_query(filters)).json()["networks"])

    # --- security groups --------------------------------------------------------------
    def list_security_groups(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        return list(self._send("GET", "/security-groups", params=_query(filters))
                    .json()["security_groups"])

    def show_security_group(self, group_id: str) -> dict[str, Any] | None:
        answer = self._send("GET", f"/security-groups/{group_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["security_group"])

    def create_security_group(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", "/security-groups", {"security_group": dict(values)})
                    .json()["security_group"])

    def update_security_group(self, group_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("PUT", f"/security-groups/{group_id}",
                               {"security_group": dict(values)}).json()["security_group"])

    def delete_security_group(self, group_id: str) -> None:
        self._send("DELETE", f"/security-groups/{group_id}")

    def show_security_group_rule(self, rule_id: str) -> dict[str, Any] | None:
        answer = self._send("GET", f"/security-group-rules/{rule_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["security_group_rule"])

    def create_security_group_rule(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", "/security-group-rules",
                               {"security_group_rule": dict(values)})
                    .json()["security_group_rule"])

    def delete_security_group_rule(self, rule_id: str) -> None:
        self._send("DELETE", f"/security-group-rules/{rule_id}")

    # --- floating IPs (router) ----------------------------------------------------------
    def list_floatingips(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        return list(self._send("GET", "/floatingips", params=_query(filters))
                    .json()["floatingips"])

    def show_floatingip(self, floatingip_id: str) -> dict[str, Any] | None:
        answer = self._send("GET", f"/floatingips/{floatingip_id}", ok=(200, 404))
        return None if answer.status == 404 else dict(answer.json()["floatingip"])

    def create_floatingip(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", "/floatingips", {"floatingip": dict(values)})
                    .json()["floatingip"])

    def update_floatingip(self, floatingip_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._send("PUT", f"/floatingips/{floatingip_id}",
                               {"floatingip": dict(values)}).json()["floatingip"])

    def delete_floatingip(self, floatingip_id: str) -> bool:
        """False when the floating IP was gone already."""
        return self._send("DELETE", f"/floatingips/{floatingip_id}",
                          ok=(204, 404)).status == 204

    # --- multiple port bindings (binding-extended) -----------------------------------
    def list_bindings(self, port_id: str) -> list[dict[str, Any]]:
        return list(self._send("GET", f"/ports/{port_id}/bindings").json()["bindings"])

    def create_binding(self, port_id: str, host: str, profile: Mapping[str, Any],
                       vnic_type: str | None = None) -> dict[str, Any]:
        binding: dict[str, Any] = {"host": host, "profile": dict(profile)}
        if vnic_type is not None:
            binding["vnic_type"] = vnic_type
        return dict(self._send("POST", f"/ports/{port_id}/bindings", {"binding": binding})
                    .json()["binding"])

    def activate_binding(self, port_id: str, host: str) -> dict[str, Any]:
        return dict(self._send("PUT", f"/ports/{port_id}/bindings/{host}/activate")
                    .json()["binding"])

    def delete_binding(self, port_id: str, host: str) -> bool:
        """False when there was no binding for that host."""
        return self._send("DELETE", f"/ports/{port_id}/bindings/{host}",
                          ok=(204, 404)).status == 204


def _query(filters: Mapping[str, str | Sequence[str]]) -> list[tuple[str, str]]:
    """Neutron's filters: a list value repeats the parameter (any of them matches)."""
    params: list[tuple[str, str]] = []
    for name, value in filters.items():
        values = [value] if isinstance(value, str) else list(value)
        params.extend((name, str(v)) for v in values)
    return params
