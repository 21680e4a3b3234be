"""The built-in identity service ("keystone-lite"): a Keystone v3 subset.

Opt-in with `[api] auth_strategy = "builtin-identity"`. Users, projects, roles
and role assignments come from the `[identity]` settings (`directory`), plus
those made through the admin API and kept in the database (`store`), with
password hashes (`passwords`); tokens are random strings kept hashed in the
database so that every API worker shares them (`tokens`, `tables`). Every
service then validates `X-Auth-Token` against them (`middleware`) and builds
the same request context noauth2 builds. `login` turns an auth body into
what the new token grants, and `lockout` counts its wrong passwords;
`catalog` lists stowage's own endpoints; `api` serves the Identity v3
routes under `/identity` (`app`); `service_auth` is the token compute sends
to services of other processes at an explicit URL (the third way of the
client factory, `web.service_clients`, after in-process and a Keystone
service user).
"""
