"""kill -9 at every journal point of an interface attach or detach, restart, and find it undone
(attach) or done (detach).

    test ──HTTP──> stowage serve (crash_at = "attach_interface:<step>:<state>") ──kill -9──┐
                   stowage serve (same database, no hook)  <── restart ───────────────────┘

The server is booted with one QoS port (1000/2000 kbps on br-physnet0); a
second QoS port is attached, or the first detached. After the restart an
attach cut off anywhere is undone: the server holds its flavor and its first
port's bandwidth, the second port is free; once its last step is journaled done
(in the transaction that ends it) it stays attached. A detach is done again: the server
holds its flavor only and the port is free. The audit finds nothing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest

from stowage.compute.conductor import interfaces
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.crashing import SMALL, Stowage, running
from tests.functional.test_crash_recovery import _PORT_OPTIONS, _PORT_QOS, PortWorld, _bridge

POINTS = (["attach_interface:accepted:done"]
          + [f"attach_interface:{step}:executing" for step in interfaces.STEPS]
          + [f"attach_interface:{interfaces.STEPS[-1]}:done",
             "detach_interface:accepted:done"])


def _network(s: Stowage) -> httpx.Client:
    return httpx.Client(base_url=f"{s.base}/network/v2.0", timeout=30,
                        headers={"x-auth-token": "admin"})


def _second_port(s: Stowage, w: PortWorld) -> str:
    with _network(s) as net:
        first = net.get(f"/ports/{w.port}").json()["port"]
        port = net.post("/ports", json={"port": {
            "network_id": first["network_id"],
            "qos_policy_id": first["qos_policy_id"]}}).json()["port"]
    return str(port["id"])


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_of_an_attach_or_detach_is_recovered(point: str, tmp_path: Path) -> None:
    operation = point.split(":")[0]
    with migrated_database(BACKENDS[0]) as url:
        db = Database(url)
        schema.upgrade(db)
        try:
            s = Stowage(url, tmp_path, crash_at=point, options=_PORT_OPTIONS)
            try:
                w = PortWorld(s)
                w.boot(s)
                if operation == "attach_interface":
                    port = _second_port(s, w)
                    with contextlib.suppress(Exception):  # the crash cuts the answer off
                        s.compute.post(f"/servers/{w.server}/os-interface",
                                       json={"interfaceAttachment": {"port_id": port}})
                else:
                    port = w.port
                    with contextlib.suppress(Exception):
                        s.compute.delete(f"/servers/{w.server}/os-interface/{port}")
                assert s.crashed(), f"the journal never reached {point}"
            finally:
                s.stop()
            with running(url, tmp_path, options=_PORT_OPTIONS) as s:
                view = s.wait_settled(w.server)
                assert view is not None and view["status"] == "ACTIVE", view
                host = view["OS-EXT-SRV-ATTR:host"]
                attached = point.endswith(":done") and operation == "attach_interface" \
                    and point != "attach_interface:accepted:done"
                kept = [w.port] if operation == "attach_interface" else []
                bound = kept + ([port] if attached else [])
                want = {s.node(host): SMALL}
                if bound:
                    want[_bridge(s, host)] = {rc: n * len(bound) for rc, n in _PORT_QOS.items()}
                assert s.held(w.server) == want
                with _network(s) as net:
                    for port_id in (w.port, port):
                        seen = net.get(f"/ports/{port_id}").json()["port"]
                        if port_id in bound:
                            assert (seen["device_id"], seen["binding:host_id"]) == (w.server,
                                                                                    host)
                            assert seen["binding:profile"]["allocation"]
                        else:
                            assert (seen["device_id"], seen["binding:host_id"]) == ("", "")
                            assert "allocation" not in seen["binding:profile"]
                listed = s.compute.get(f"/servers/{w.server}/os-interface").json()
                assert sorted(a["port_id"] for a in listed["interfaceAttachments"]) == sorted(
                    bound)
                assert s.audit(db) == []
        finally:
            db.dispose()
