"""Who may do what: the Placement rule table and a small check-string evaluator.

Rules and defaults are upstream Placement's, so an operator's existing policy
file keeps its meaning. Check strings use the oslo.policy grammar subset that
those defaults and typical overrides need: ``@``, ``!``, ``role:R``,
``rule:NAME``, ``project_id:%(project_id)s``-style comparisons (target keys
may name a parent's attribute, ``%(network:tenant_id)s``; ``tenant_id`` is
the caller's project, as Neutron's context gives it), a quoted literal
compared with a target value (Glance's ``"public":%(visibility)s``),
Neutron's ``field:RESOURCE:ATTR=VALUE`` (``=~`` for a regular expression),
``and``, ``or``, ``not`` and parentheses. In legacy mode (``enforce_new_defaults`` off)
a rule that has a deprecated default passes when either check passes, as
oslo.policy does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from stowage.config import PolicySettings
from stowage.context import RequestContext

__all__ = ["Enforcer", "PolicyNotAuthorized", "PLACEMENT_RULES"]

ADMIN_OR_SERVICE = "rule:admin_or_service_api"

# name -> (check string, deprecated check string or None)
BASE_RULES: dict[str, tuple[str, str | None]] = {
    "admin_api": ("role:admin", None),
    "service_api": ("role:service", "role:admin"),
    "admin_or_service_api": ("role:admin or role:service", "role:admin"),
    "project_reader_api": ("role:reader and project_id:%(project_id)s", "role:admin"),
    "admin_or_project_reader_or_service_api": (
        "role:admin or rule:project_reader_api or role:service", "role:admin"),
}

_ADMIN_OR_SERVICE_NOUNS = [
    "resource_providers:" + a for a in ("list", "create", "show", "update", "delete")
] + [
    "resource_classes:" + a for a in ("list", "create", "show", "update", "delete")
] + [
    "resource_providers:inventories:" + a
    for a in ("list", "create", "show", "update", "delete")
] + [
    "resource_providers:aggregates:list", "resource_providers:aggregates:update",
    "resource_providers:usages",
    "traits:list", "traits:show", "traits:update", "traits:delete",
    "resource_providers:traits:list", "resource_providers:traits:update",
    "resource_providers:traits:delete",
    "allocations:manage", "allocations:list", "allocations:update", "allocations:delete",
    "resource_providers:allocations:list", "allocation_candidates:list",
]

PLACEMENT_RULES: dict[str, tuple[str, str | None]] = {
    **BASE_RULES,
    **{"placement:" + n: (ADMIN_OR_SERVICE, None) for n in _ADMIN_OR_SERVICE_NOUNS},
    "placement:usages": ("rule:admin_or_project_reader_or_service_api", None),
    "placement:reshaper:reshape": ("rule:service_api", None),
}


# Rules registered without scope_types; all others accept project-scoped tokens only.
UNSCOPED_RULES = frozenset({"project_reader_api"})


class PolicyNotAuthorized(Exception):
    def __init__(self, action: str) -> None:
        super().__init__(f"Policy does not allow {action} to be performed.")
        self.action = action


# A token is a parenthesis, or a check that may embed a %(target)s reference.
_TOKEN = re.compile(r"\s*([^\s()]*%\([\w:]+\)s[^\s()]*|\(|\)|[^\s()]+)")
_TARGET_REF = re.compile(r"%\(([\w:]+)\)s")
Check = Callable[[RequestContext, Mapping[str, object]], bool]


@dataclass
class _Parser:
    """Recursive-descent parser: or-expr := and-expr ('or' and-expr)*, etc."""

    tokens: list[str]
    resolve: Callable[[str], Check]
    pos: int = 0

    def parse(self) -> Check:
        if not self.tokens:
            return lambda ctx, target: True
        check = self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected token {self.tokens[self.pos]!r}")
        return check

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _or(self) -> Check:
        parts = [self._and()]
        while self._peek() == "or":
            self.pos += 1
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else (
            lambda ctx, t: any(p(ctx, t) for p in parts))

    def _and(self) -> Check:
        parts = [self._not()]
        while self._peek() == "and":
            self.pos += 1
            parts.append(self._not())
        return parts[0] if len(parts) == 1 else (
            lambda ctx, t: all(p(ctx, t) for p in parts))

    def _not(self) -> Check:
        if self._peek() == "not":
            self.pos += 1
            inner = self._not()
            return lambda ctx, t: not inner(ctx, t)
        return self._atom()

    def _atom(self) -> Check:
        tok = self._peek()
        if tok is None:
            raise ValueError("unexpected end of check string")
        self.pos += 1
        if tok == "(":
            inner = self._or()
            if self._peek() != ")":
                raise ValueError("missing ')'")
            self.pos += 1
            return inner
        return _leaf(tok, self.resolve)


def _leaf(tok: str, resolve: Callable[[str], Check]) -> Check:
    if tok == "@":
        return lambda ctx, t: True
    if tok == "!":
        return lambda ctx, t: False
    if tok.startswith("field:"):
        return _field(tok[len("field:"):])
    if tok[:1] in "'\"":
        return _literal(tok)
    kind, _, value = tok.partition(":")
    if kind == "rule":
        return lambda ctx, t: resolve(value)(ctx, t)
    if kind == "role":
        role = value.lower()
        return lambda ctx, t: role in (r.lower() for r in ctx.roles)
    return _generic(kind, value)


def _target_value(value: str, target: Mapping[str, object]) -> object:
    match = _TARGET_REF.fullmatch(value)
    return target.get(match.group(1)) if match else value


def _generic(kind: str, value: str) -> Check:
    """``attr:%(target)s`` compares a context attribute with a target value."""
    # Neutron's context calls the caller's project `tenant_id` as well.
    attribute = "project_id" if kind == "tenant_id" else kind

    def check(ctx: RequestContext, target: Mapping[str, object]) -> bool:
        actual = getattr(ctx, attribute, None)
        if kind == "is_admin":
            return str(ctx.is_admin) == value
        expected = _target_value(value, target)
        return actual is not None and expected is not None and str(actual) == str(expected)

    return check


def _literal(tok: str) -> Check:
    """``"public":%(visibility)s``: a quoted constant equal to a target value."""
    quoted, _, value = tok.rpartition(":")
    constant = quoted[1:-1]
    return lambda ctx, t: str(_target_value(value, t)) == constant


def _field(spec: str) -> Check:
    """Neutron's ``field:networks:shared=True``: the target's attribute has the value
    (``=~`` matches a regular expression); the resource name only documents."""
    _, _, test = spec.partition(":")
    name, _, wanted = test.partition("=")
    if wanted.startswith("~"):
        pattern = re.compile(wanted[1:])
        return lambda ctx, t: t.get(name) is not None and bool(pattern.match(str(t[name])))
    return lambda ctx, t: name in t and str(t[name]) == wanted


class Enforcer:
    """Evaluates named rules for a context; built once per application."""

    def __init__(self, settings: PolicySettings,
                 rules: Mapping[str, tuple[str, str | None]] = PLACEMENT_RULES) -> None:
        self._checks: dict[str, Check] = {}
        self._project_scoped = frozenset(rules) - UNSCOPED_RULES
        for name, (check_str, deprecated) in rules.items():
            if name in settings.overrides:
                check_str, deprecated = settings.overrides[name], None
            elif deprecated and not settings.enforce_new_defaults:
                check_str = f"({check_str}) or ({deprecated})"
            self._checks[name] = self._compile(check_str)
        for name, check_str in settings.overrides.items():
            self._checks.setdefault(name, self._compile(check_str))

    def _compile(self, check_str: str) -> Check:
        tokens = _TOKEN.findall(check_str)
        return _Parser(tokens, self._lookup).parse()

    def defines(self, name: str) -> bool:
        """Whether a rule of that name exists: a default, or one an operator added."""
        return name in self._checks

    def _lookup(self, name: str) -> Check:
        return self._checks.get(name, lambda ctx, t: False)

    def allowed(self, action: str, ctx: RequestContext,
                target: Mapping[str, object] | None = None) -> bool:
        # Every registered rule but project_reader_api is project-scoped, and
        # oslo.policy always refuses a system-scoped token for those.
        if ctx.system_scope and action in self._project_scoped:
            return False
        return self._lookup(action)(ctx, target if target is not None else ctx.policy_target())

    def authorize(self, action: str, ctx: RequestContext,
                  target: Mapping[str, object] | None = None) -> None:
        if not self.allowed(action, ctx, target):
            raise PolicyNotAuthorized(action)
