"""What a port's `allowed_address_pairs` and `extra_dhcp_opts` may be: Neutron's
validators (neutron-lib's allowedaddresspairs and extra_dhcp_opt definitions), with
their error types and messages, checked in Neutron's order.

The pairs' own errors (too many, no ip_address, a duplicate) are typed as
Neutron types them; the others are 400 HTTPBadRequest. Options failing
validation are `Invalid input for extra_dhcp_opts. Reason: ...`.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from stowage.errors import Invalid
from stowage.network.api.attributes import bad, ip_address, mac_address
from stowage.network.port_extras import MAX_ADDRESS_PAIRS

__all__ = ["address_pairs", "dhcp_options"]

_PAIR_KEYS = frozenset({"ip_address", "mac_address"})
_OPT_KEYS = frozenset({"opt_name", "opt_value", "ip_version", "id"})


def _pair(value: Any, seen: set[tuple[Any, Any]]) -> dict[str, Any]:
    """One pair as Neutron's _validate_allowed_address_pairs checks it, in its order."""
    if not isinstance(value, dict):
        raise ValueError(f"'{value}' is not a dictionary")
    mac = value.get("mac_address")
    if "mac_address" in value:
        try:
            mac = mac_address(mac)
        except ValueError as exc:
            raise bad(str(exc)) from None
    if "ip_address" not in value:
        raise Invalid("AllowedAddressPair must contain ip_address",
                      "AllowedAddressPairsMissingIP")
    if (mac, value["ip_address"]) in seen:
        raise Invalid("Request contains duplicate address pair: mac_address "
                      f"{mac} ip_address {value['ip_address']}.",
                      "DuplicateAddressPairInRequest")
    seen.add((mac, value["ip_address"]))
    unknown = set(value) - _PAIR_KEYS
    if unknown:
        raise bad(f"Unrecognized attribute(s) '{', '.join(sorted(unknown))}'")
    return {"ip_address": _ip_or_cidr(value["ip_address"]), "mac_address": mac}


def _ip_or_cidr(value: Any) -> str:
    if isinstance(value, str) and "/" in value:
        try:
            network = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise bad(f"'{value}' is not a valid IP subnet") from None
        # A host prefix (/32, /128) is shown as the bare address, as Neutron stores it.
        if network.prefixlen == network.max_prefixlen:
            return str(network.network_address)
        return str(network)
    try:
        return ip_address(value)
    except ValueError as exc:
        raise bad(str(exc)) from None


def address_pairs(value: Any) -> list[dict[str, Any]]:
    """The `allowed_address_pairs` validator: a list of at most MAX_ADDRESS_PAIRS pairs
    (null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("Allowed address pairs must be a list.")
    if len(value) > MAX_ADDRESS_PAIRS:
        raise Invalid("The number of allowed address pair exceeds the maximum "
                      f"{MAX_ADDRESS_PAIRS}.", "AllowedAddressPairExhausted")
    seen: set[tuple[Any, Any]] = set()
    return [_pair(item, seen) for item in value]


def _option(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"'{value}' is not a dictionary")
    if not {"opt_name", "opt_value"} <= set(value) or set(value) - _OPT_KEYS:
        raise ValueError("Validation of dictionary's keys failed. Expected keys: "
                         "{'opt_name', 'opt_value'} Provided keys: "
                         f"{set(value)}")
    name, opt_value = value["opt_name"], value["opt_value"]
    if not isinstance(name, str) or not name.strip() or len(name) > 64:
        raise ValueError(f"'{name}' is not a valid option name")
    if opt_value is not None and (not isinstance(opt_value, str) or not opt_value.strip()
                                  or len(opt_value) > 255):
        raise ValueError(f"'{opt_value}' is not a valid option value")
    version = value.get("ip_version", 4)
    if isinstance(version, str) and version.isdigit():
        version = int(version)
    if isinstance(version, bool) or version not in (4, 6):
        raise ValueError(f"{version} is not in [4, 6]")
    return {"opt_name": name, "opt_value": opt_value, "ip_version": version}


def dhcp_options(value: Any) -> list[dict[str, Any]]:
    """The `extra_dhcp_opts` validator (null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"'{value}' is not a list")
    return [_option(item) for item in value]
