"""GET and DELETE /servers/{id}/os-server-password: the guest's encrypted admin password.

In Nova a guest agent posts its password, encrypted with the server's key
pair, to the metadata service, which keeps it in the instance's
system_metadata in 255-character chunks `password_0` .. `password_3`. GET
joins the chunks (`{"password": ""}` when there are none); DELETE blanks
them (204), so that a password an operator has read does not stay stored.
stowage serves no metadata service, so no guest posts one: GET answers ""
unless something stored chunks, and DELETE still clears whatever is there.
"""

from __future__ import annotations

from stowage.compute import instances as inst
from stowage.compute.api.common import API_PREFIX, authorize
from stowage.compute.api.server_common import get_server, locked_server, target
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "CHUNKS"]

# Nova's password_0 .. password_3.
CHUNKS = tuple(f"password_{n}" for n in range(4))


def show_password(req: Request) -> Response:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
    authorize(req, "os_compute_api:os-server-password:show", target(instance))
    meta = instance.system_metadata or {}
    return json_response({"password": "".join(str(meta.get(key) or "") for key in CHUNKS)})


def clear_password(req: Request) -> Response:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
    authorize(req, "os_compute_api:os-server-password:clear", target(instance))
    with req.app.server_db(req.params["server_id"]).write() as conn:
        # The row is held to the commit: a concurrent system_metadata write
        # (a shelve's image id) is not lost to this read-modify-write.
        instance = locked_server(req, conn, instance.uuid)
        meta = dict(instance.system_metadata or {})
        meta.update({key: "" for key in CHUNKS})
        inst.save(conn, instance.uuid, system_metadata=meta)
    return empty_response(204)


_PASSWORD = API_PREFIX + "/servers/{server_id}/os-server-password"
ROUTES = [
    Route("GET", _PASSWORD, show_password),
    Route("DELETE", _PASSWORD, clear_password),
]
