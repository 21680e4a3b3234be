"""SQLAlchemy Core tables of the built-in identity service: tokens, API-made entries.

A token is stored by the SHA-256 of its text, never the text itself, with
what it grants (user, scope, effective role names) frozen at issue time, as
Keystone's tokens are. Every API worker reads the same rows.
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.placement.tables import exact_string

__all__ = ["metadata", "identity_tokens", "identity_projects", "identity_users",
           "identity_roles", "identity_assignments", "identity_login_failures"]

metadata = sa.MetaData()

identity_tokens = sa.Table(
    "identity_tokens", metadata,
    sa.Column("token_hash", exact_string(64), primary_key=True),
    sa.Column("user_id", exact_string(64), nullable=False),
    sa.Column("project_id", exact_string(64), nullable=True),
    sa.Column("domain_id", exact_string(64), nullable=True),
    # Role names, comma-separated, implied roles included (Text: API-made role names).
    sa.Column("roles", sa.Text, nullable=False),
    # Authentication methods, comma-separated ("password", "password,token").
    sa.Column("methods", sa.String(64), nullable=False),
    sa.Column("audit_id", exact_string(32), nullable=False),
    sa.Column("parent_audit_id", exact_string(32), nullable=True),
    sa.Column("issued_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False, index=True),
)

# --- the directory entries created through the API (`identity.store`) ------------------
# The settings file's users, projects and roles never live here; these rows sit
# next to them. Ids are uuid4 hex, as Keystone's; names are unique per domain
# (roles: globally), so two workers creating one name race into one 409.

identity_projects = sa.Table(
    "identity_projects", metadata,
    sa.Column("id", exact_string(64), primary_key=True),
    sa.Column("name", exact_string(64), nullable=False),
    sa.Column("domain_id", exact_string(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("domain_id", "name", name="uniq_identity_projects0domain_id0name"),
)

identity_users = sa.Table(
    "identity_users", metadata,
    sa.Column("id", exact_string(64), primary_key=True),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("domain_id", exact_string(64), nullable=False),
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("email", sa.String(255), nullable=True),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    # Not a foreign key: Keystone keeps a default project that no longer exists.
    sa.Column("default_project_id", exact_string(64), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("domain_id", "name", name="uniq_identity_users0domain_id0name"),
)

identity_roles = sa.Table(
    "identity_roles", metadata,
    sa.Column("id", exact_string(64), primary_key=True),
    sa.Column("name", exact_string(255), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("name", name="uniq_identity_roles0name"),
)

# A role held directly on a project or on a domain. No foreign keys: the user,
# the role or the target may be a settings-file entry.
identity_assignments = sa.Table(
    "identity_assignments", metadata,
    sa.Column("user_id", exact_string(64), primary_key=True),
    sa.Column("role_id", exact_string(64), primary_key=True),
    sa.Column("target_type", exact_string(16), primary_key=True),  # "project" | "domain"
    sa.Column("target_id", exact_string(64), primary_key=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_identity_assignments_target_id", "target_id"),
)

# Failed password logins per user (`identity.lockout`), as Keystone's local_user
# failed_auth_count / failed_auth_at. No foreign key: settings-file users count too.
# A row exists only while a user has failures to count; success deletes it.
identity_login_failures = sa.Table(
    "identity_login_failures", metadata,
    sa.Column("user_id", exact_string(64), primary_key=True),
    sa.Column("failed_count", sa.Integer, nullable=False),
    sa.Column("failed_at", sa.DateTime, nullable=False),
)
