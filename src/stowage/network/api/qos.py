"""`/v2.0/qos/...` (extensions `qos`, `qos-bw-minimum-ingress`): policies, their
minimum-bandwidth rules, and the rule types this service supports.

A policy is seen by its project's readers and, when shared, by anybody
with a role (`get_policy`); every write is admin only by default
(`create_policy`, `update_policy_minimum_bandwidth_rule`, ...; see
network/policy.py).
"""

from __future__ import annotations

from typing import Any

from stowage.network import errors as e
from stowage.network import qos
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    NAME,
    Attr,
    boolean,
    integer,
    one_of,
    owned_attrs,
    parse,
    read_only,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

# Neutron's limit for rule values: a 4-byte signed integer column.
MAX_KBPS = 2**31 - 1
POLICY_ATTRS = owned_attrs(NAME, DESCRIPTION, Attr("shared", boolean), *read_only("rules"))
RULE_ATTRS = (
    Attr("min_kbps", integer(0, MAX_KBPS), required=True),
    Attr("direction", one_of(qos.DIRECTIONS)),
    *read_only("id", "qos_policy_id", "type"),
)
POLICY_FILTERS = ("id", "name", "description", "shared", "tenant_id", "project_id",
                  "revision_number")
RULE_FILTERS = ("id", "min_kbps", "direction")
RULE_KEY = "minimum_bandwidth_rule"
# The drivers this service stands in for, and the parameters each accepts.
_DRIVERS = [{"name": name, "supported_parameters": [
    {"parameter_name": "min_kbps", "parameter_type": "range",
     "parameter_values": {"start": 0, "end": MAX_KBPS}},
    {"parameter_name": "direction", "parameter_type": "choices",
     "parameter_values": list(qos.DIRECTIONS)}]} for name in ("openvswitch", "sriovnicswitch")]


def _target(found: qos.Policy) -> dict[str, object]:
    """What the rules see of a policy; its rules' parent (`ext_parent`) is the policy."""
    return {"id": found.id, "project_id": found.project_id, "tenant_id": found.project_id,
            "shared": found.shared, "ext_parent:tenant_id": found.project_id}


def _authorize(req: Request, action: str, values: dict[str, Any] | None = None) -> None:
    """Hold the caller to `action` on the policy of the path: 404 if they cannot see it,
    403 if they can but the rule refuses (a create is refused with 403, as Neutron's
    API layer hides only the records it changes or deletes)."""
    policy_id = req.params["policy_id"]
    seen = _target(common.read(req, lambda conn: qos.get(conn, req.context, policy_id)))
    hidden = None if action.startswith("create_") else (lambda: qos.missing(policy_id))
    common.guard(req).check(action, {**seen, **(values or {})}, values or (), hidden, seen)


def list_policies(req: Request) -> Response:
    filters = common.query_filters(req, POLICY_FILTERS)
    ids = filters.get("id")
    found = common.read(req, lambda conn: qos.list_policies(conn, req.context, ids))
    guard = common.guard(req)
    shown = [views.qos_policy(q) for q in found if guard.allows("get_policy", _target(q))]
    return common.listing(req, shown, filters, "policies", "qos/policies")


def show_policy(req: Request) -> Response:
    policy_id = req.params["policy_id"]
    found = common.read(req, lambda conn: qos.get(conn, req.context, policy_id))
    if not common.guard(req).allows("get_policy", _target(found)):
        raise qos.missing(policy_id)
    return json_response({"policy": common.select_fields(views.qos_policy(found),
                                                         common.fields_of(req))})


def create_policy(req: Request) -> Response:
    values = parse(req, "policy", POLICY_ATTRS, create=True, action="create_policy")
    project_id = values.get("project_id") or req.context.project_id or ""
    common.guard(req).check("create_policy", {**values, "project_id": project_id,
                                              "tenant_id": project_id}, values)
    made = common.write(req, lambda conn: qos.create(conn, req.context, values))
    return json_response({"policy": views.qos_policy(made)}, status=201)


def update_policy(req: Request) -> Response:
    values = parse(req, "policy", POLICY_ATTRS, create=False, action="update_policy")
    _authorize(req, "update_policy", values)
    expected = common.expected_revision(req)
    changed = common.write(req, lambda conn: qos.update(
        conn, req.context, req.params["policy_id"], values, expected))
    return json_response({"policy": views.qos_policy(changed)})


def delete_policy(req: Request) -> Response:
    _authorize(req, "delete_policy")
    expected = common.expected_revision(req)
    common.write(req, lambda conn: qos.delete(conn, req.context, req.params["policy_id"],
                                              expected))
    return empty_response(204)


def list_rules(req: Request) -> Response:
    filters = common.query_filters(req, RULE_FILTERS)
    found = common.read(req, lambda conn: qos.get(conn, req.context, req.params["policy_id"]))
    shown = common.apply_filters([views.rule(r) for r in found.rules], filters)
    fields = common.fields_of(req)
    return json_response({"minimum_bandwidth_rules": [common.select_fields(v, fields)
                                                      for v in shown]})


def show_rule(req: Request) -> Response:
    found = common.read(req, lambda conn: qos.get_rule(
        conn, req.context, req.params["policy_id"], req.params["rule_id"]))
    return json_response({RULE_KEY: common.select_fields(views.rule(found),
                                                         common.fields_of(req))})


def create_rule(req: Request) -> Response:
    values = parse(req, RULE_KEY, RULE_ATTRS, create=True,
                   action="create_policy_minimum_bandwidth_rule")
    _authorize(req, "create_policy_minimum_bandwidth_rule")
    made = common.write(req, lambda conn: qos.create_rule(
        conn, req.context, req.params["policy_id"], values["min_kbps"],
        values.get("direction", "egress")))
    return json_response({RULE_KEY: views.rule(made)}, status=201)


def update_rule(req: Request) -> Response:
    values = parse(req, RULE_KEY, RULE_ATTRS, create=False,
                   action="update_policy_minimum_bandwidth_rule")
    _authorize(req, "update_policy_minimum_bandwidth_rule")
    changed = common.write(req, lambda conn: qos.update_rule(
        conn, req.context, req.params["policy_id"], req.params["rule_id"], values))
    return json_response({RULE_KEY: views.rule(changed)})


def delete_rule(req: Request) -> Response:
    _authorize(req, "delete_policy_minimum_bandwidth_rule")
    common.write(req, lambda conn: qos.delete_rule(
        conn, req.context, req.params["policy_id"], req.params["rule_id"]))
    return empty_response(204)


def list_rule_types(req: Request) -> Response:
    common.query_filters(req, ("type", "all_supported", "all_rules"))
    return json_response({"rule_types": [{"type": qos.RULE_TYPE}]})


def show_rule_type(req: Request) -> Response:
    common.authorize(req, "get_rule_type")
    if req.params["rule_type"] != qos.RULE_TYPE:
        raise HTTPError(404, f"QoS rule type {req.params['rule_type']} could not be found.",
                        e.RULE_TYPE_NOT_FOUND)
    return json_response({"rule_type": {"type": qos.RULE_TYPE, "drivers": _DRIVERS}})


_POLICY = "/v2.0/qos/policies/{policy_id}"
_RULES = _POLICY + "/minimum_bandwidth_rules"
ROUTES = [
    Route("GET", "/v2.0/qos/policies", list_policies),
    Route("POST", "/v2.0/qos/policies", create_policy, json_body=True),
    Route("GET", _POLICY, show_policy),
    Route("PUT", _POLICY, update_policy, json_body=True),
    Route("DELETE", _POLICY, delete_policy),
    Route("GET", _RULES, list_rules),
    Route("POST", _RULES, create_rule, json_body=True),
    Route("GET", _RULES + "/{rule_id}", show_rule),
    Route("PUT", _RULES + "/{rule_id}", update_rule, json_body=True),
    Route("DELETE", _RULES + "/{rule_id}", delete_rule),
    Route("GET", "/v2.0/qos/rule-types", list_rule_types),
    Route("GET", "/v2.0/qos/rule-types/{rule_type}", show_rule_type),
]
