"""One question to Keystone: is this token valid, and what does it say?

The service logs in with its own `[keystone_authtoken]` credentials through a
keystoneauth1 `Session` and password plugin, which fetches the service's
token on first use and again when it nears its expiry (or when Keystone
answers 401, once). Tokens are validated at the identity endpoint the
catalog lists for `interface` and `region_name`, as auth_token does:

    GET /v3/auth/tokens?nocatalog   X-Auth-Token: <service>  X-Subject-Token: <user>
      200 -> TokenInfo        404 -> None (not a token Keystone will vouch for)
      anything else, or no answer within the bounded timeout -> KeystoneUnavailable
"""

from __future__ import annotations

import logging
from typing import Any

from keystoneauth1 import adapter, session
from keystoneauth1 import exceptions as ksa_exc
from keystoneauth1.identity import v3

from stowage.config import KeystoneAuthtokenSettings
from stowage.web.keystone.tokeninfo import TokenInfo, parse

__all__ = ["KeystoneUnavailable", "Validator"]

LOG = logging.getLogger(__name__)


class KeystoneUnavailable(Exception):
    """Keystone could not give a verdict (unreachable, 5xx, refused our login): a 503."""


class Validator:
    def __init__(self, conf: KeystoneAuthtokenSettings) -> None:
        conf.check_complete()
        auth = v3.Password(auth_url=conf.auth_url or "", username=conf.username,
                           password=conf.password or "", project_name=conf.project_name,
                           **_domains(conf))
        self.session = session.Session(auth=auth, timeout=conf.http_connect_timeout,
                                       connect_retries=conf.http_request_max_retries,
                                       verify=conf.verify, cert=conf.cert)
        self._identity = adapter.Adapter(
            self.session, service_type="identity", interface=conf.interface,
            region_name=conf.region_name, version="3.0",
            connect_retries=conf.http_request_max_retries)

    def validate(self, token: str, allow_expired: bool = False) -> TokenInfo | None:
        """Keystone's reading of `token`; None if Keystone does not know it as valid."""
        params = {"nocatalog": "1", **({"allow_expired": "1"} if allow_expired else {})}
        try:
            resp = self._identity.get("/auth/tokens", params=params, raise_exc=False,
                                      headers={"X-Subject-Token": token})
        except ksa_exc.ClientException as exc:
            LOG.error("cannot validate a token with Keystone: %s", exc)
            raise KeystoneUnavailable(str(exc)) from exc
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            LOG.error("Keystone answered %s to a token validation: %s", resp.status_code,
                      resp.text[:500])
            raise KeystoneUnavailable(f"Keystone answered {resp.status_code}")
        try:
            return parse(resp.json())
        except (ValueError, KeyError, TypeError) as exc:
            LOG.warning("Keystone's token body cannot be read: %s", exc)
            return None


def _domains(conf: KeystoneAuthtokenSettings) -> dict[str, Any]:
    """The user's and the project's domain, each by id when the file gives one, else by
    name: keystoneauth would send both, and Keystone refuses a name and id that differ
    in case (`default` is the id of the domain named `Default`)."""
    found: dict[str, Any] = {}
    for who in ("user", "project"):
        domain_id = getattr(conf, f"{who}_domain_id")
        if domain_id:
            found[f"{who}_domain_id"] = domain_id
        else:
            found[f"{who}_domain_name"] = getattr(conf, f"{who}_domain_name")
    return found
