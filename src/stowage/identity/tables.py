"""SQLAlchemy Core table of the built-in identity service: issued tokens.

A token is stored by the SHA-256 of its text, never the text itself, with
what it grants (user, scope, effective role names) frozen at issue time, as
Keystone's tokens are. Every API worker reads the same rows.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "identity_tokens"]

metadata = sa.MetaData()

identity_tokens = sa.Table(
    "identity_tokens", metadata,
    sa.Column("token_hash", exact_string(64), primary_key=True),
    sa.Column("user_id", exact_string(64), nullable=False),
    sa.Column("project_id", exact_string(64), nullable=True),
    sa.Column("domain_id", exact_string(64), nullable=True),
    # Role names, comma-separated, implied roles included.
    sa.Column("roles", sa.String(255), nullable=False),
    # Authentication methods, comma-separated ("password", "password,token").
    sa.Column("methods", sa.String(64), nullable=False),
    sa.Column("audit_id", exact_string(32), nullable=False),
    sa.Column("parent_audit_id", exact_string(32), nullable=True),
    sa.Column("issued_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False, index=True),
)
