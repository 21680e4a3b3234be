"""What a boot request carries besides where it runs: key pair, security groups, disk config.

Each is checked as Nova's compute API checks it when the server is created
(and, for the disk config, resized, updated or rebuilt):

    key_name           the caller's own key pair of that name, else 400 "Invalid
                       key_name provided."; its public key is kept on the server
                       (`key_data`), which outlives the key pair
    security_groups    "default" always exists; stowage's Network service has no
                       security groups, so any other name is 400 SecurityGroupNotFound
    OS-DCF:diskConfig  AUTO or MANUAL; absent, the image's `auto_disk_config`
                       property decides (false without one); AUTO on an image whose
                       property is "disabled" is 400 AutoDiskConfigDisabledByImage
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import keypairs
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["key_data", "check_security_groups", "auto_disk_config", "DEFAULT_GROUP"]

DEFAULT_GROUP = "default"
# oslo's strutils.bool_from_string true values, as the image property is read.
_TRUE = ("1", "t", "true", "on", "y", "yes")


def key_data(conn: Connection, req: Request, key_name: str | None) -> str | None:
    """The public key of the caller's key pair `key_name` (None without a key_name)."""
    if key_name is None:
        return None
    try:
        return keypairs.get(conn, req.context.user_id or "", key_name).public_key
    except NotFound:
        raise HTTPError(400, "Invalid key_name provided.") from None


def check_security_groups(names: Sequence[str]) -> None:
    """Every group named must exist; only the default group does here."""
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
