"""schema.HEAD, which spares a process at head importing Alembic, is Alembic's head."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from stowage.db import schema


def test_head_is_the_newest_migration() -> None:
    script = ScriptDirectory.from_config(schema._alembic_config())
    assert script.get_heads() == [schema.HEAD], "set schema.HEAD to the new migration"
