"""Neutron's error types, frozen: the `type` of `{"NeutronError": {"type": ..., ...}}`.

Domain code raises the shared `NotFound` / `Conflict` / `Invalid` /
`Forbidden` with one of these codes (404 / 409 / 400 / 403), or `StatusError`
for the few statuses those four do not cover (412, 500, 501, 503). The
messages are Neutron's, so that clients matching on them keep working.
"""

from __future__ import annotations

from stowage.errors import Conflict, DomainError, Invalid, NotFound

__all__ = ["StatusError", "not_found", "in_use", "invalid_input", "bad_request",
           "NETWORK_NOT_FOUND", "SUBNET_NOT_FOUND", "PORT_NOT_FOUND", "QOS_POLICY_NOT_FOUND",
           "QOS_RULE_NOT_FOUND", "PORT_BINDING_NOT_FOUND", "EXTENSION_NOT_FOUND",
           "RULE_TYPE_NOT_FOUND", "NETWORK_IN_USE", "SUBNET_IN_USE", "QOS_POLICY_IN_USE",
           "IP_ADDRESS_IN_USE", "MAC_ADDRESS_IN_USE", "IP_GENERATION_FAILURE",
           "FLAT_NETWORK_IN_USE", "VLAN_ID_IN_USE", "TUNNEL_ID_IN_USE", "NO_NETWORK_AVAILABLE",
           "QOS_RULES_CONFLICT", "PORT_BINDING_EXISTS", "PORT_BINDING_ACTIVE",
           "PORT_BINDING_ERROR", "INVALID_INPUT", "BAD_REQUEST", "HTTP_BAD_REQUEST",
           "POLICY_NOT_AUTHORIZED", "PRECONDITION_FAILED", "NOT_IMPLEMENTED",
           "INVALID_IP_FOR_NETWORK", "INVALID_IP_FOR_SUBNET", "OUT_OF_BOUNDS_POOL",
           "OVERLAPPING_POOLS", "GATEWAY_CONFLICT", "SECURITY_GROUP_NOT_FOUND",
           "SECURITY_GROUP_RULE_NOT_FOUND", "SECURITY_GROUP_IN_USE",
           "SECURITY_GROUP_CANNOT_REMOVE_DEFAULT", "SECURITY_GROUP_CANNOT_UPDATE_DEFAULT",
           "SECURITY_GROUP_DEFAULT_EXISTS", "SECURITY_GROUP_RULE_EXISTS",
           "SECURITY_GROUP_RULE_INVALID_PROTOCOL", "SECURITY_GROUP_RULE_INVALID_ETHERTYPE",
           "SECURITY_GROUP_PROTOCOL_REQUIRED_WITH_PORTS", "SECURITY_GROUP_INVALID_PORT_VALUE",
           "SECURITY_GROUP_INVALID_PORT_RANGE", "SECURITY_GROUP_INVALID_ICMP_VALUE",
           "SECURITY_GROUP_MISSING_ICMP_TYPE", "SECURITY_GROUP_INVALID_PROTOCOL_FOR_PORT_RANGE",
           "SECURITY_GROUP_REMOTE_GROUP_AND_PREFIX", "SECURITY_GROUP_RULE_PARAMETER_CONFLICT",
           "DNS_NAMESERVERS_EXHAUSTED", "HOST_ROUTES_EXHAUSTED", "OVER_QUOTA"]

# 404
NETWORK_NOT_FOUND = "NetworkNotFound"
SUBNET_NOT_FOUND = "SubnetNotFound"
PORT_NOT_FOUND = "PortNotFound"
QOS_POLICY_NOT_FOUND = "QosPolicyNotFound"
QOS_RULE_NOT_FOUND = "QosRuleNotFound"
PORT_BINDING_NOT_FOUND = "PortBindingNotFound"
EXTENSION_NOT_FOUND = "HTTPNotFound"
RULE_TYPE_NOT_FOUND = "QosRuleTypeNotFound"
SECURITY_GROUP_NOT_FOUND = "SecurityGroupNotFound"
SECURITY_GROUP_RULE_NOT_FOUND = "SecurityGroupRuleNotFound"
# 409
NETWORK_IN_USE = "NetworkInUse"
SUBNET_IN_USE = "SubnetInUse"
QOS_POLICY_IN_USE = "QosPolicyInUse"
IP_ADDRESS_IN_USE = "IpAddressInUse"
MAC_ADDRESS_IN_USE = "MacAddressInUse"
IP_GENERATION_FAILURE = "IpAddressGenerationFailure"
FLAT_NETWORK_IN_USE = "FlatNetworkInUse"
VLAN_ID_IN_USE = "VlanIdInUse"
TUNNEL_ID_IN_USE = "TunnelIdInUse"
QOS_RULES_CONFLICT = "QoSRulesConflict"
PORT_BINDING_EXISTS = "PortBindingAlreadyExists"
PORT_BINDING_ACTIVE = "PortBindingAlreadyActive"
OVERLAPPING_POOLS = "OverlappingAllocationPools"
GATEWAY_CONFLICT = "GatewayConflictWithAllocationPools"
SECURITY_GROUP_IN_USE = "SecurityGroupInUse"
SECURITY_GROUP_CANNOT_REMOVE_DEFAULT = "SecurityGroupCannotRemoveDefault"
SECURITY_GROUP_CANNOT_UPDATE_DEFAULT = "SecurityGroupCannotUpdateDefault"
SECURITY_GROUP_DEFAULT_EXISTS = "SecurityGroupDefaultAlreadyExists"
SECURITY_GROUP_RULE_EXISTS = "SecurityGroupRuleExists"
OVER_QUOTA = "OverQuota"
# 400
INVALID_INPUT = "InvalidInput"
BAD_REQUEST = "BadRequest"
HTTP_BAD_REQUEST = "HTTPBadRequest"
INVALID_IP_FOR_NETWORK = "InvalidIpForNetwork"
INVALID_IP_FOR_SUBNET = "InvalidIpForSubnet"
OUT_OF_BOUNDS_POOL = "OutOfBoundsAllocationPool"
SECURITY_GROUP_RULE_INVALID_PROTOCOL = "SecurityGroupRuleInvalidProtocol"
SECURITY_GROUP_RULE_INVALID_ETHERTYPE = "SecurityGroupRuleInvalidEtherType"
SECURITY_GROUP_PROTOCOL_REQUIRED_WITH_PORTS = "SecurityGroupProtocolRequiredWithPorts"
SECURITY_GROUP_INVALID_PORT_VALUE = "SecurityGroupInvalidPortValue"
SECURITY_GROUP_INVALID_PORT_RANGE = "SecurityGroupInvalidPortRange"
SECURITY_GROUP_INVALID_ICMP_VALUE = "SecurityGroupInvalidIcmpValue"
SECURITY_GROUP_MISSING_ICMP_TYPE = "SecurityGroupMissingIcmpType"
SECURITY_GROUP_INVALID_PROTOCOL_FOR_PORT_RANGE = "SecurityGroupInvalidProtocolForPortRange"
SECURITY_GROUP_REMOTE_GROUP_AND_PREFIX = "SecurityGroupRemoteGroupAndRemoteIpPrefix"
SECURITY_GROUP_RULE_PARAMETER_CONFLICT = "SecurityGroupRuleParameterConflict"
DNS_NAMESERVERS_EXHAUSTED = "DNSNameServersExhausted"
HOST_ROUTES_EXHAUSTED = "HostRoutesExhausted"
# 403, 412, 500, 501, 503
POLICY_NOT_AUTHORIZED = "PolicyNotAuthorized"
PRECONDITION_FAILED = "HTTPPreconditionFailed"
PORT_BINDING_ERROR = "PortBindingError"
NOT_IMPLEMENTED = "NotImplementedError"
NO_NETWORK_AVAILABLE = "NoNetworkAvailable"


class StatusError(DomainError):
    """A failure whose status is none of 400/403/404/409."""

    def __init__(self, status: int, detail: str, code: str) -> None:
        super().__init__(detail, code)
        self.status = status


def not_found(code: str, detail: str) -> NotFound:
    return NotFound(detail, code)


def in_use(code: str, detail: str) -> Conflict:
    return Conflict(detail, code)


def invalid_input(message: str) -> Invalid:
    """Neutron's InvalidInput: the plugin refused values the API layer let through."""
    return Invalid(f"Invalid input for operation: {message}.", INVALID_INPUT)


def bad_request(resource: str, message: str) -> Invalid:
    """Neutron's BadRequest: `Bad <resource> request: <message>.`"""
    return Invalid(f"Bad {resource} request: {message}.", BAD_REQUEST)
