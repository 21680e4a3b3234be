"""A real Keystone for the tests and the bench: PyPI `keystone` in a side venv.

`server.KeystoneServer` runs it (SQLite, fernet tokens, gunicorn on loopback);
`admin.KeystoneAdmin` makes projects, users and role assignments through its
own API with keystoneauth1; `fixture.keystone` is the session-scoped pytest
fixture over both.
"""
