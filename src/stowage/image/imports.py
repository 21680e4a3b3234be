"""Glance's interoperable image import, `glance-direct` only: stage the data, then import it.

    queued --stage (PUT .../stage)--> uploading --import (POST .../import)--> importing
        ^          |                                                             |
        +- failure-+        uploading <-- failure (staged data kept) ----+       |
                                                                          |       v
                                       data.upload: importing -> saving -> active

Staged data is one file per image under `<store_dir>/staging/`, written to a
`.part` file and renamed into place once whole (as data.py writes the store),
so an import never reads half an upload. The import moves it into the store
through data.upload (size, checksum and os_hash computed there) and records a
Glance task (`api_image_import`, tasks.py) that ends `success` or `failure`.

Deliberate difference: Glance runs the import in the background after its 202;
here the import runs within the request, so the 202 comes once the image is
active (or the import has failed). A server killed during the import leaves the
image as data.recover finds it (`saving` -> `queued`) and the task `processing`.

`web-download`, `glance-download` and `copy-image` are not served: this
cloud's Image service reaches no outside network and has one store.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from stowage.config import Settings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.errors import Conflict, DomainError
from stowage.image import data, tasks
from stowage.image import images as img
from stowage.image import tables as t
from stowage.timeutil import utcnow

__all__ = ["METHODS", "stage", "start", "run"]

_I = t.images
# The import methods this cloud offers (Glance's `enabled_import_methods`).
METHODS = ("glance-direct",)
_CHUNK = 64 * 1024


def _set_status(db: Database, image_id: str, old: str, new: str) -> bool:
    """Compare-and-swap the image's status; False if it was no longer `old`."""
    with db.write() as conn:
        # UPDATE images SET status = :new WHERE id = :id AND status = :old
        return bool(conn.execute(_I.update().where(_I.c.id == image_id, _I.c.status == old)
                                 .values(status=new, updated_at=utcnow())).rowcount)


def _write(part: Path, chunks: Iterable[bytes], cap: int) -> None:
    size = 0
    with open(part, "xb") as out:
        for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise data.TooLarge(f"Image exceeds the storage quota: The incoming image is "
                                    f"too large: {size} bytes, the most is {cap}.")
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())


def stage(db: Database, settings: Settings, image: img.Image,
          chunks: Iterable[bytes]) -> None:
    """Keep `chunks` as the image's staged data and make it `uploading`. Only a queued
    image takes staged data (Conflict otherwise, Glance's words); any failure puts it
    back to `queued` with nothing staged, and is re-raised."""
    if not _set_status(db, image.id, "queued", "uploading"):
        with db.read() as conn:
            now = img.get(conn, image.id, data.SERVICE).status
        raise Conflict(f"Image status transition from {now} to uploading is not allowed")
    target = data.staging_path(settings, image.id)
    part = target.with_name(f"{target.name}.{os.getpid()}.{uuid.uuid4().hex}.part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write(part, chunks, settings.api.image_size_cap)
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
        _set_status(db, image.id, "uploading", "queued")
        raise


def start(db: Database, image_id: str, ctx: RequestContext,
          request: dict[str, Any]) -> tasks.Task:
    """Check the image may be imported (Glance's order and words, all 409s), make it
    `importing` and record the task, in one transaction."""
    with db.write() as conn:
        img.lock(conn, image_id)
        image = img.get(conn, image_id, ctx)
        if image.status == "active":
            raise Conflict("Image with status active cannot be target for import")
        if image.status != "uploading":
            raise Conflict("Image needs to be staged before 'glance-direct' method can be "
                           "used")
        for field in ("container_format", "disk_format"):
            if not getattr(image, field):
                raise Conflict(f"'{field}' needs to be set before import")
        conn.execute(_I.update().where(_I.c.id == image.id)
                     .values(status="importing", updated_at=utcnow()))
        return tasks.create(conn, ctx, "api_image_import", image_id=image.id,
                            task_input={"image_id": image.id, "import_req": request,
                                        "backend": [None]})


def _staged(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            yield chunk


def run(db: Database, settings: Settings, task: tasks.Task) -> None:
    """Move the staged data into the store (importing -> active) and close the task.
    On failure the image goes back to `uploading` (its data still staged, so the
    import may be asked again) and the task ends `failure` with the reason."""
    image_id = str(task.image_id)
    path = data.staging_path(settings, image_id)
    try:
        data.upload(db, settings, image_id, _staged(path))
    except (DomainError, OSError) as exc:
        reason = exc.detail if isinstance(exc, DomainError) else str(exc)
        _set_status(db, image_id, "importing", "uploading")
        with db.write() as conn:
            tasks.finish(conn, task.id, "failure", message=reason)
        return
    with contextlib.suppress(OSError):
        path.unlink()
    with db.write() as conn:
        tasks.finish(conn, task.id, "success", result={"image_id": image_id})


