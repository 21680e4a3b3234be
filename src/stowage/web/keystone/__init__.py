"""`[api] auth_strategy = "keystone"`: tokens validated by an outside Keystone.

What keystonemiddleware's auth_token does in front of every upstream
service, done with keystoneauth1 directly (docs/keystone.md says why):

    request --X-Auth-Token--> authenticator --cache hit--> RequestContext
                                   | miss
                                   v
                 GET /v3/auth/tokens (X-Subject-Token) as the service user
                   200 -> TokenInfo (cached)   404 -> 401 (briefly cached)
                   unreachable / 5xx / refused service login -> 503

Modules: `tokeninfo` reads Keystone's token body, `cache` keeps validated
tokens, `validator` asks Keystone, `authenticator` applies auth_token's rules
(service tokens included) and builds the request context.
"""

from stowage.web.keystone.authenticator import (
    KeystoneAuthenticator,
    KeystoneUnavailable,
    authenticator,
)

__all__ = ["KeystoneAuthenticator", "KeystoneUnavailable", "authenticator"]
