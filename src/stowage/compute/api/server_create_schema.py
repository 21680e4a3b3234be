"""The POST /servers body: Nova's create schema per microversion, and what it leaves to code.

The schema changes with the microversion: 2.19 adds `description`, 2.37
makes `networks` required and "auto"/"none" legal, 2.42 adds network and bdm
tags (2.32 had bdm tags only), 2.52 the server's `tags`, 2.57 drops
`personality`, 2.67 adds the bdm `volume_type`, 2.74 `host` and
`hypervisor_hostname`, 2.90 `hostname`.

Nova's schema also names formats that its format checker enforces and plain
jsonschema validation skips: `check_formats` applies them (ipv4 and ipv6 for
accessIPv4/v6, base64 for user_data, ip_address for a network's fixed_ip and
the build_near_host_ip hint), with Nova's wording. Scheduler hints are typed
as Nova types them: group and different_host are uuids, same_host a string
or a list of uuids. `counts` reads min_count/max_count, which the schema
lets through as digit strings of any length.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
from typing import Any

from stowage.web.errors import HTTPError, shorten

__all__ = ["NAME", "DESCRIPTION", "HOSTNAME", "SETTABLE_HOSTNAME", "TRUE_STRINGS", "TAGS",
           "TAGS_ON_CREATE", "create_schema", "check_formats", "access_ips", "counts"]

_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
NAME = {"type": "string", "minLength": 1, "maxLength": 255}
DESCRIPTION = {"type": ["string", "null"], "minLength": 0, "maxLength": 255}
TRUE_STRINGS = ("True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t")
_FALSE = ("False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n", "f")
_BOOLEAN = {"type": ["boolean", "string"], "enum": [True, False, *TRUE_STRINGS, *_FALSE]}
_POSITIVE = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 1,
             "minLength": 1}
_METADATA = {"type": "object",
             "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string",
                                                                  "maxLength": 255}},
             "additionalProperties": False}
_NETWORK_ITEM: dict[str, Any] = {"type": "object",
                 "properties": {"fixed_ip": {"type": "string"},
                                "port": {"type": ["string", "null"]},
                                "uuid": {"type": "string"}},
                 "additionalProperties": False}
_BDM = {"type": "object",
        "properties": {
            "source_type": {"type": "string", "enum": ["volume", "image", "snapshot", "blank"]},
            "destination_type": {"type": "string", "enum": ["local", "volume"]},
            "uuid": {"type": "string", "minLength": 1, "maxLength": 255,
                     "pattern": "^[a-zA-Z0-9._-]*$"},
            "image_id": {"type": "string"}, "volume_id": {"type": "string"},
            "snapshot_id": {"type": "string"},
            "boot_index": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$"},
            "volume_size": {"type": ["integer", "string"], "pattern": "^[0-9]+$",
                            "minimum": 1},
            "delete_on_termination": _BOOLEAN,
            "device_name": {"type": "string", "minLength": 1, "maxLength": 255,
                            "pattern": "^[a-zA-Z0-9._/-]*$"},
            "guest_format": {"type": "string", "maxLength": 255},
            "device_type": {"type": "string", "maxLength": 255},
            "disk_bus": {"type": "string", "maxLength": 255},
            "no_device": {}, "virtual_name": {"type": "string", "maxLength": 255}},
        "additionalProperties": False}
_UUID_STRING = {"type": "string", "pattern": _UUID}
_UUIDS = {"oneOf": [_UUID_STRING, {"type": "array", "items": _UUID_STRING}]}
# Nova's hints: known ones typed, any other passed on to the scheduler as given.
_HINTS = {"type": "object",
          "properties": {"group": _UUIDS,
                         "different_host": _UUIDS,
                         # As in Nova, only a list's items must be uuids.
                         "same_host": {"type": ["string", "array"], "items": _UUID_STRING},
                         "query": {"type": ["string", "object"]},
                         "target_cell": NAME,
                         "different_cell": {"type": ["string", "array"],
                                            "items": {"type": "string"}},
                         "build_near_host_ip": {"type": "string"},
                         "cidr": {"type": "string", "pattern": "^/[0-9a-f.:]+$"}},
          "additionalProperties": True}
_TAG = {"type": "string", "pattern": "^[^,/]*$", "minLength": 1, "maxLength": 60}
# 2.52: a server's tags on create (Nova's server tags: at most 50).
TAGS_ON_CREATE = 52
TAGS = {"type": "array", "items": _TAG, "maxItems": 50}
_FQDN = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": "^[a-zA-Z0-9-._]*$"}
# 2.90's `hostname` (create, update) is Nova's parameter_types.hostname, the same
# shape as the 2.74 host; 2.94 would widen it to a full FQDN.
HOSTNAME = _FQDN
SETTABLE_HOSTNAME = 90


def create_schema(minor: int) -> dict[str, Any]:
    """Nova's create schema as it stands at 2.`minor`."""
    server: dict[str, Any] = {
        "name": NAME,
        "imageRef": {"oneOf": [{"type": "string", "pattern": _UUID},
                               {"type": "string", "maxLength": 0}]},
        "flavorRef": {"type": ["string", "integer"], "minLength": 1},
        "adminPass": {"type": "string"},
        "metadata": _METADATA,
        "networks": {"type": "array", "items": _NETWORK_ITEM},
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        "accessIPv4": {"type": "string"}, "accessIPv6": {"type": "string"},
        "availability_zone": NAME,
        "block_device_mapping_v2": {"type": "array", "items": copy.deepcopy(_BDM)},
        "config_drive": _BOOLEAN,
        "key_name": NAME,
        "min_count": _POSITIVE, "max_count": _POSITIVE,
        "return_reservation_id": _BOOLEAN,
        "security_groups": {"type": "array",
                            "items": {"type": "object", "properties": {"name": NAME},
                                      "additionalProperties": False}},
        "user_data": {"type": "string", "maxLength": 65535},
    }
    required = ["name", "flavorRef"]
    if minor < 57:
        server["personality"] = {"type": "array"}
    if minor >= 19:
        server["description"] = DESCRIPTION
    if minor >= 37:
        required.append("networks")
        item: dict[str, Any] = copy.deepcopy(_NETWORK_ITEM)
        item["properties"]["uuid"] = {"type": "string", "pattern": _UUID}
        if minor >= 42:
            item["properties"]["tag"] = _TAG
        server["networks"] = {"oneOf": [{"type": "array", "items": item},
                                        {"type": "string", "enum": ["none", "auto"]}]}
    bdm_props = server["block_device_mapping_v2"]["items"]["properties"]
    if minor >= 42 or minor == 32:
        bdm_props["tag"] = _TAG
    if minor >= 67:
        bdm_props["volume_type"] = {"type": ["string", "null"], "minLength": 0,
                                    "maxLength": 255}
    if minor >= 74:
        server["host"] = _FQDN
        server["hypervisor_hostname"] = _FQDN
    if minor >= TAGS_ON_CREATE:
        server["tags"] = TAGS
    if minor >= SETTABLE_HOSTNAME:
        server["hostname"] = HOSTNAME
    return {"type": "object",
            "properties": {"server": {"type": "object", "properties": server,
                                      "required": required, "additionalProperties": False},
                           "os:scheduler_hints": _HINTS, "OS-SCH-HNT:scheduler_hints": _HINTS},
            "required": ["server"], "additionalProperties": False}


def _is_ip(value: str, version: int | None = None) -> bool:
    """As jsonschema's ipv4/ipv6 formats: an address of that version, no IPv6 zone (`%eth0`)."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    if getattr(address, "scope_id", None):
        return False
    return version is None or address.version == version


def _is_base64(value: str) -> bool:
    """Nova's base64 format: what oslo's decode_as_bytes (b64decode, not strict) takes."""
    try:
        base64.b64decode(value.encode("ascii"))
    except (binascii.Error, UnicodeError):
        return False
    return True


def _bad_format(path: str, value: str, reason: str) -> HTTPError:
    """Nova's wording for a value its format checker refused."""
    return HTTPError(400, f"Invalid input for field/attribute {path}. Value: {shorten(value)}. "
                          f"{shorten(value)!r} {reason}")


def access_ips(server: dict[str, Any]) -> dict[str, str]:
    """The instance columns for a body's accessIPv4/accessIPv6 (create, update, rebuild),
    each checked as Nova's ipv4/ipv6 formats check it (400 in its wording) and stored
    in canonical form, as Nova's IPAddress column stores it ("0:0::1" -> "::1")."""
    values: dict[str, str] = {}
    for name, column, version in (("accessIPv4", "access_ip_v4", 4),
                                  ("accessIPv6", "access_ip_v6", 6)):
        if name in server:
            if not _is_ip(server[name], version):
                raise _bad_format(name, server[name], f"is not a 'ipv{version}'")
            values[column] = str(ipaddress.ip_address(server[name]))
    return values


def check_formats(data: dict[str, Any]) -> None:
    """The formats Nova's create schema names (ipv4, ipv6, base64, ip_address), checked."""
    server = data["server"]
    access_ips(server)
    if "user_data" in server and not _is_base64(server["user_data"]):
        raise _bad_format("user_data", server["user_data"], "is not a 'base64'")
    networks = server.get("networks")
    for index, network in enumerate(networks if isinstance(networks, list) else []):
        if "fixed_ip" in network and not _is_ip(network["fixed_ip"]):
            raise _bad_format(f"networks/{index}/fixed_ip", network["fixed_ip"],
                              "is not valid under any of the given schemas")
    for key in ("os:scheduler_hints", "OS-SCH-HNT:scheduler_hints"):
        near = (data.get(key) or {}).get("build_near_host_ip")
        if near is not None and not _is_ip(near):
            raise _bad_format(f"{key}/build_near_host_ip", near,
                              "is not valid under any of the given schemas")


def _count(value: int | str) -> int:
    """A min_count/max_count as a number; a digit string too long for int() is capped.

    Only its comparison with the per-request limit matters then, and Python
    refuses to convert strings of more than 4300 digits.
    """
    if isinstance(value, int):
        return value
    digits = value.lstrip("0") or "0"
    return int(digits) if len(digits) <= 20 else 10 ** 20


def counts(body: dict[str, Any]) -> tuple[int, int]:
    """(min_count, max_count); "0", which the schema's digit pattern lets through, is refused."""
    min_count = _count(body.get("min_count", 1))
    max_count = _count(body.get("max_count", min_count))
    for name, value in (("min_count", min_count), ("max_count", max_count)):
        if value < 1:
            raise HTTPError(400, f"Invalid input for field/attribute {name}. Value: "
                                 f"{body[name]}. {value} is less than the minimum of 1")
    if min_count > max_count:
        raise HTTPError(400, "min_count must be <= max_count")
    return min_count, max_count
