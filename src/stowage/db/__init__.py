"""Database access: engines, transactions and schema migrations."""

from stowage.db.engine import Database

__all__ = ["Database"]
