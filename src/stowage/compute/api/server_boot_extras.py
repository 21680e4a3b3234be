"""What a boot request carries besides where it runs: key pair, security groups, disk config.

`rebuild_values` applies the same checks to a rebuild body's accessIPv4/v6,
OS-DCF:diskConfig and (2.54) key_name, for the rebuild handler.

Each is checked as Nova's compute API checks it when the server is created
(and, for the disk config, resized, updated or rebuilt):

    key_name           the caller's own key pair of that name, else 400 "Invalid
                       key_name provided."; its public key is kept on the server
                       (`key_data`), which outlives the key pair
    security_groups    without a Network service, only "default" exists: any other
                       name is 400 SecurityGroupNotFound (with one, the names are
                       resolved to its groups: server_security_groups.resolve)
    OS-DCF:diskConfig  AUTO or MANUAL; absent, the image's `auto_disk_config`
                       property decides (false without one); AUTO on an image whose
                       property is "disabled" is 400 AutoDiskConfigDisabledByImage.
                       A resize or cold migration sets it anew, as Nova's does:
                       AUTO if the body says so, else MANUAL
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import keypairs
from stowage.compute.api.server_create_schema import access_ips
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["key_data", "check_security_groups", "auto_disk_config", "rebuild_values",
           "moved_disk_config", "DEFAULT_GROUP"]

DEFAULT_GROUP = "default"
# oslo's strutils.bool_from_string true values, as the image property is read.
_TRUE = ("1", "t", "true", "on", "y", "yes")


def key_data(conn: Connection, req: Request, key_name: str | None) -> str | None:
    """The public key of the caller's key pair `key_name` (None without a key_name)."""
    if key_name is None:
        return None
    try:
        with req.app.db.using(conn) as api:
            return keypairs.get(api, req.context.user_id or "", key_name).public_key
    except NotFound:
        raise HTTPError(400, "Invalid key_name provided.") from None


def check_security_groups(names: Sequence[str]) -> None:
    """Without a Network service every group named must be the default one."""
    for name in names:
        if name != DEFAULT_GROUP:
            raise HTTPError(400, f"Security group {name} not found.")


def auto_disk_config(requested: str | None, image_id: str | None,
                     image_properties: Mapping[str, Any]) -> bool:
    """The server's auto_disk_config from OS-DCF:diskConfig and the image's property."""
    from_image = image_properties.get("auto_disk_config")
    if requested == "AUTO" and str(from_image).lower() == "disabled":
        raise HTTPError(400, f"Requested image {image_id} has automatic disk resize disabled.")
    if requested is not None:
        return requested == "AUTO"
    return str(from_image).strip().lower() in _TRUE


def rebuild_values(conn: Connection, req: Request, body: Mapping[str, Any],
                   image_id: str | None, image_properties: Mapping[str, Any]) -> dict[str, Any]:
    """The instance columns a rebuild body sets, checked as on create: access IPs,
    auto_disk_config when OS-DCF:diskConfig is given, and key_name/key_data when
    key_name is given (null clears both)."""
    values: dict[str, Any] = dict(access_ips(dict(body)))
    if "OS-DCF:diskConfig" in body:
        values["auto_disk_config"] = auto_disk_config(body["OS-DCF:diskConfig"], image_id,
                                                      image_properties)
    if "key_name" in body:
        values["key_name"] = body["key_name"]
        values["key_data"] = key_data(conn, req, body["key_name"])
    return values


def moved_disk_config(req: Request, conn: Connection, instance: inst.Instance,
                      requested: str | None) -> bool:
    """auto_disk_config after a resize or cold migration (Nova's `resize` stores
    `auto_disk_config or False`), checked against the image the server was built from."""
    if requested is None:
        return False
    try:
        with req.app.db.using(conn) as api:
            image = inst.request_spec(api, instance.uuid).get("image") or {}
    except NotFound:
        image = {}
    return auto_disk_config(requested, instance.image_ref, image.get("properties") or {})
