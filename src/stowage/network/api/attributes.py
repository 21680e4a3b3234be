"""Request bodies checked the way Neutron's API layer checks them (its attribute maps).

Each resource declares its attributes once: whether POST and PUT may set
them, how a value is validated and converted, and whether it is required.
`parse()` (and `parse_create()`, which also takes Neutron's bulk body
`{"<resource>s": [...]}`) then refuses, in Neutron's words and with nothing
written:

- a body without the resource key ("Unable to find 'port' in request body");
- an unknown attribute ("Unrecognized attribute(s) 'foo'");
- a read-only one ("Attribute 'status' not allowed in POST",
  "Cannot update read-only attribute status");
- a bad value ("Invalid input for mtu. Reason: 'x' is not an integer.");
- a missing required one ("Failed to parse request. Required attribute
  'network_id' not specified");
- another project named by a non-admin.

Who may send which attribute is for the rules (`create_network:shared`, ...;
network/policy.py), asked where the record is known.

The validators raise ValueError with Neutron's reason; `parse()` words it.
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stowage.context import RequestContext
from stowage.network import errors as e
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError, shorten
from stowage.web.http import Request

__all__ = ["Attr", "parse", "parse_create", "body_of", "bad", "string", "boolean", "uuid_value",
           "uuid_or_none", "integer", "one_of", "dict_or_none", "mac_address", "ip_address",
           "fixed_ips", "allocation_pools", "nameservers", "host_routes", "STRING", "NAME",
           "DESCRIPTION", "PROJECT_ATTRS", "owned_attrs", "read_only", "ip_address_or_none"]

Validator = Callable[[Any], Any]
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")


@dataclass(frozen=True)
class Attr:
    name: str
    validate: Validator
    post: bool = True
    put: bool = True
    required: bool = False


def bad(message: str) -> HTTPError:
    return HTTPError(400, message, e.HTTP_BAD_REQUEST)


def _shown(value: Any) -> str:
    return shorten(str(value))


def string(max_length: int) -> Validator:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"'{_shown(value)}' is not a valid string")
        if len(value) > max_length:
            raise ValueError(f"'{_shown(value)}' exceeds maximum length of {max_length}")
        return value
    return check


STRING = string(255)
NAME = Attr("name", STRING)
DESCRIPTION = Attr("description", STRING)


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise ValueError(f"'{_shown(value)}' cannot be converted to boolean")


def uuid_value(value: Any) -> str:
    try:
        if isinstance(value, str) and str(uuid.UUID(value)) == value.lower():
            return value
    except ValueError:
        pass
    raise ValueError(f"'{_shown(value)}' is not a valid UUID")


def uuid_or_none(value: Any) -> str | None:
    return None if value is None else uuid_value(value)


def integer(low: int | None = None, high: int | None = None,
            nullable: bool = False) -> Validator:
    def check(value: Any) -> int | None:
        if value is None and nullable:
            return None
        try:
            if isinstance(value, bool | float):
                raise ValueError
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError(f"'{_shown(value)}' is not an integer") from None
        if low is not None and number < low:
            raise ValueError(f"'{number}' is too small - must be at least '{low}'")
        if high is not None and number > high:
            raise ValueError(f"'{number}' is too large - must be no larger than '{high}'")
        return number
    return check


def one_of(values: Sequence[Any]) -> Validator:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or value not in values:
            raise ValueError(f"'{_shown(value)}' is not in {list(values)}")
        return value
    return check


def dict_or_none(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"'{_shown(value)}' is not a dictionary")
    try:
        # 1e400 decodes to inf, which no JSON column (nor JSON answer) can hold.
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError(f"'{_shown(value)}' holds a number out of range") from None
    return value


# Neutron's INVALID_MAC_ADDRESSES: the all-zero and the broadcast address.
_INVALID_MACS = frozenset({"00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"})


def mac_address(value: Any) -> str:
    if not isinstance(value, str) or not _MAC.match(value) \
            or value.replace("-", ":").lower() in _INVALID_MACS:
        raise ValueError(f"'{_shown(value)}' is not a valid MAC address")
    return value.replace("-", ":").lower()


def _address(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not isinstance(value, str):
        return None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    # A zone index ('fe80::1%eth0') names a link, not an address to hand out: the same
    # address with and without one would be two allocations.
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        return None
    return address


def ip_address(value: Any) -> str:
    address = _address(value)
    if address is None:
        raise ValueError(f"'{_shown(value)}' is not a valid IP address")
    return str(address)


def ip_address_or_none(value: Any) -> str | None:
    return None if value is None else ip_address(value)


def _fixed_ip(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not value or set(value) - {"subnet_id", "ip_address"}:
        raise ValueError(f"Invalid data format for fixed IP: '{_shown(value)}'")
    entry = {}
    if "subnet_id" in value:
        entry["subnet_id"] = uuid_value(value["subnet_id"])
    if "ip_address" in value:
        entry["ip_address"] = ip_address(value["ip_address"])
    return entry


def fixed_ips(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise ValueError(f"Invalid data format for fixed IP: '{_shown(value)}'")
    return [_fixed_ip(item) for item in value]


def allocation_pools(value: Any) -> list[dict[str, str]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"Invalid data format for IP pool: '{_shown(value)}'")
    pools = []
    for pool in value:
        if not isinstance(pool, dict) or set(pool) != {"start", "end"}:
            raise ValueError(f"Invalid data format for IP pool: '{_shown(pool)}'")
        pools.append({"start": ip_address(pool["start"]), "end": ip_address(pool["end"])})
    return pools


def nameservers(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"Invalid data format for nameserver: '{_shown(value)}'")
    seen: set[str] = set()
    for item in value:
        if _address(item) is None:
            raise ValueError(f"'{_shown(item)}' is not a valid nameserver")
        if item in seen:
            raise ValueError(f"Duplicate nameserver '{item}'")
        seen.add(item)
    return list(value)


def _route(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) != {"destination", "nexthop"}:
        raise ValueError(f"Invalid data format for hostroute: '{_shown(value)}'")
    try:
        destination = str(ipaddress.ip_network(value["destination"]))
    except (TypeError, ValueError):
        raise ValueError(f"'{_shown(value['destination'])}' is not a valid IP subnet") \
            from None
    return {"destination": destination, "nexthop": ip_address(value["nexthop"])}


def host_routes(value: Any) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"Invalid data format for hostroute: '{_shown(value)}'")
    return [_route(item) for item in value]


PROJECT_ATTRS = (Attr("project_id", string(255), put=False),
                 Attr("tenant_id", string(255), put=False))
STANDARD_READ_ONLY = ("id", "revision_number", "created_at", "updated_at")


def _as_is(value: Any) -> Any:
    return value


def read_only(*names: str) -> tuple[Attr, ...]:
    """Attributes shown but never sent: naming one is 'not allowed', not 'unrecognized'."""
    return tuple(Attr(name, _as_is, post=False, put=False) for name in names)


def owned_attrs(*attrs: Attr) -> tuple[Attr, ...]:
    """A resource's attributes plus its project and the standard read-only ones."""
    return (*attrs, *PROJECT_ATTRS, *read_only(*STANDARD_READ_ONLY))


def body_of(req: Request, resource: str) -> dict[str, Any]:
    """The `{resource: {...}}` member of the JSON body."""
    try:
        data = load_json(req.body) if req.body else None
    except InvalidJSON:
        raise bad("Malformed request body") from None
    if not isinstance(data, dict) or not data:
        raise bad("Resource body required")
    inner = data.get(resource)
    if not isinstance(inner, dict):
        raise bad(f"Unable to find '{resource}' in request body")
    return inner


def _check_names(raw: Mapping[str, Any], known: Mapping[str, Attr], create: bool) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise bad(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    for name in raw:
        if create and not known[name].post:
            raise bad(f"Attribute '{name}' not allowed in POST")
        if not create and not known[name].put:
            raise bad(f"Cannot update read-only attribute {name}")


def _project(values: dict[str, Any], ctx: RequestContext) -> None:
    """tenant_id and project_id are one attribute; only admins name another project."""
    tenant = values.pop("tenant_id", None)
    if tenant is not None and values.get("project_id") not in (None, tenant):
        raise bad("'project_id' and 'tenant_id' do not match")
    if tenant is not None:
        values["project_id"] = tenant
    project = values.get("project_id")
    if project is not None and project != ctx.project_id and not ctx.is_admin:
        raise bad("Specifying 'project_id' or 'tenant_id' other than the authenticated "
                  "project in request requires admin privileges")


def _checked(req: Request, raw: Mapping[str, Any], attrs: Sequence[Attr], create: bool,
             action: str) -> dict[str, Any]:
    """The validated, converted values of one record's attributes."""
    known = {a.name: a for a in attrs}
    _check_names(raw, known, create)
    values: dict[str, Any] = {}
    for name, value in raw.items():
        try:
            values[name] = known[name].validate(value)
        except ValueError as exc:
            raise bad(f"Invalid input for {name}. Reason: {exc}.") from None
    if create:
        for attr in attrs:
            if attr.required and attr.name not in values:
                raise bad(f"Failed to parse request. Required attribute '{attr.name}' not "
                          "specified")
    _project(values, req.context)
    return values


def parse(req: Request, resource: str, attrs: Sequence[Attr], create: bool,
          action: str) -> dict[str, Any]:
    """The validated, converted values of the body (see the module docstring)."""
    return _checked(req, body_of(req, resource), attrs, create, action)


def parse_create(req: Request, resource: str, attrs: Sequence[Attr],
                 action: str) -> tuple[list[dict[str, Any]], bool]:
    """A create's records, and whether it is a bulk one (`{"<resource>s": [...]}`, each
    item bare or under `resource`), checked item by item as Neutron's
    prepare_request_body does."""
    collection = f"{resource}s"
    try:
        data = load_json(req.body) if req.body else None
    except InvalidJSON:
        raise bad("Malformed request body") from None
    if not isinstance(data, dict) or collection not in data:
        return [parse(req, resource, attrs, True, action)], False
    items = data[collection]
    if not items:
        raise bad("Resources required")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise bad("Body contains invalid data")
    found = []
    for item in items:
        raw = item.get(resource, item)
        if not isinstance(raw, dict):
            raise bad("Body contains invalid data")
        found.append(_checked(req, raw, attrs, True, action))
    return found, True
