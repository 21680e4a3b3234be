"""Adopting an upstream OpenStack Placement database, and giving it back.

    upstream Placement DB ──import──▶ stowage DB ──export──▶ upstream-schema DB

    upstream_schema  upstream 16.0.0's tables (SQLAlchemy Core), its revisions
    source           which upstream databases can be read, and why not
    copying          streaming rows between databases in batches, ids kept
    progress         rows/s per table on stderr, for large databases
    importer         `stowage manage placement import`: all or nothing
    exporter         `stowage manage placement export`: into an empty database

Rows keep their ids both ways (docs/placement-import.md says why), so an
import followed by an export gives upstream back the rows it had.
"""

from stowage.placement.adopt.exporter import ExportFailed, ExportRefused, export_database
from stowage.placement.adopt.importer import ImportFailed, ImportRefused, import_database

__all__ = ["ExportFailed", "ExportRefused", "ImportFailed", "ImportRefused", "export_database",
           "import_database"]
