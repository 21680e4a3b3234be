"""Image data in the filesystem store: upload (queued -> saving -> active), read, remove.

One file per image in `[image] store_dir`, named by the image's id. An upload
is written to a `.part` file beside it and renamed into place only once every
byte has arrived and its md5 `checksum`, `sha512` multihash and size are
known, so a reader never sees half an image. Statuses, as Glance's:

    queued --upload--> saving --all data--> active
                         |
                         +--failure (client gone, read error, too large, over quota)
                            --> back to the status it had (queued); the .part file removed

`upload` is what every writer of image bytes calls: the API's `PUT .../file`
(image/api_data.py), compute's snapshots and shelving, and the import of
staged data. It works in its own short transactions (never one held open while
bytes arrive), taking a `Database` rather than a connection for that reason.

A server killed mid-upload leaves its image `saving` and a `.part` file:
`recover` (run when the Image service starts) puts such images back to
`queued` and removes the `.part` files of writers no longer running, so the
upload can simply be tried again (docs/image.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import Settings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.errors import Conflict, DomainError, Invalid, NotFound
from stowage.image import images as img
from stowage.image import tables as t
from stowage.timeutil import utcnow

__all__ = ["SERVICE", "ImageGone", "TooLarge", "HASH_ALGO", "store_dir", "data_path", "upload",
           "open_data", "remove", "recover"]

_I = t.images
HASH_ALGO = "sha512"
# Who acts when a caller passes no context (compute's snapshots, start-up recovery).
SERVICE = RequestContext(user_id="image", roles=("admin",))
# Statuses an upload may start from: a new image; Glance's staging/import ones
# (image part 2 moves staged data into the store through `upload`).
UPLOADABLE = ("queued", "uploading", "importing")
_PART = ".part"


class ImageGone(NotFound):
    """The image was deleted while its data arrived (Glance's 410 Gone); no file is left."""


class TooLarge(DomainError):
    """The data passes `[api] image_size_cap` or the owner's `user_storage_quota` (413)."""

    kind = "too_large"


def store_dir(settings: Settings) -> Path:
    """The store's directory: `[image] store_dir`, else beside a SQLite database's file
    (stowage.db -> stowage_images/), else `stowage_images` in the working directory."""
    if settings.image.store_dir:
        return Path(settings.image.store_dir)
    url = sa.make_url(settings.database)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        db_file = Path(str(url.database))
        return db_file.with_name(f"{db_file.stem}_images")
    return Path("stowage_images")


def _safe_id(image_id: str) -> str:
    """An image id as a file name: a uuid, else NotFound (no image has another id)."""
    try:
        return str(uuid.UUID(image_id))
    except ValueError:
        raise NotFound(f"No image found with ID {image_id}") from None


def data_path(settings: Settings, image_id: str) -> Path:
    """Where an active image's data lives (the id is a uuid: no path tricks)."""
    return store_dir(settings) / str(uuid.UUID(image_id))


def staging_path(settings: Settings, image_id: str) -> Path:
    """Where an image's staged data waits for its import (imports.py; the id is a uuid)."""
    return store_dir(settings) / "staging" / str(uuid.UUID(image_id))


def _start(conn: Connection, image_id: str, ctx: RequestContext,
           settings: Settings) -> tuple[img.Image, int]:
    """Lock the image, check it takes data, mark it saving; its owner's room left."""
    img.lock(conn, image_id)
    image = img.get(conn, image_id, ctx)
    if image.status not in UPLOADABLE:
        raise Conflict(f"Image status transition from {image.status} to saving is not "
                       "allowed")
    missing = [k for k in ("disk_format", "container_format") if not getattr(image, k)]
    if missing:
        noun = "Property" if len(missing) == 1 else "Properties"
        raise Invalid(f"{noun} {', '.join(missing)} must be set prior to saving data.")
    room = settings.api.image_size_cap
    quota = settings.image.user_storage_quota
    if quota:
        used = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(_I.c.size), 0))
                            .where(_I.c.owner == image.owner, _I.c.id != image.id,
                                   _I.c.status != "queued")).scalar_one()
        room = min(room, max(quota - int(used), 0))
        if room == 0:
            raise _over_quota(0, 0)
    conn.execute(_I.update().where(_I.c.id == image.id)
                 .values(status="saving", updated_at=utcnow()))
    return image, room


def _over_quota(size: int, remaining: int) -> TooLarge:
    return TooLarge("Denying attempt to upload image because it exceeds the quota: The size "
                    f"of the data {size} will exceed the limit. {remaining} bytes remaining.")


def _write(part: Path, chunks: Iterable[bytes], room: int,
           settings: Settings) -> tuple[int, str, str]:
    """Write the chunks to `part`: (size, md5, sha512) or TooLarge past `room` bytes."""
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha512()
    size = 0
    with open(part, "wb") as out:
        for chunk in chunks:
            size += len(chunk)
            if size > room:
                if room < settings.api.image_size_cap:
                    raise _over_quota(size, room)
                raise TooLarge(f"Image exceeds the storage quota: The incoming image is "
                               f"too large: {size} bytes, the most is {room}.")
            out.write(chunk)
            md5.update(chunk)
            sha.update(chunk)
        out.flush()
        os.fsync(out.fileno())
    return size, md5.hexdigest(), sha.hexdigest()


def _restore(db: Database, image_id: str, status: str) -> None:
    """A failed upload: the image goes back to the status it had, if still saving."""
    with db.write() as conn:
        conn.execute(_I.update().where(_I.c.id == image_id, _I.c.status == "saving")
                     .values(status=status, updated_at=utcnow()))


def upload(db: Database, settings: Settings, image_id: str, chunks: Iterable[bytes], *,
           ctx: RequestContext | None = None) -> img.Image:
    """Store `chunks` as the data of image `image_id` and make it active.

    `db` is the API database (the Image service's `ImageState.db`, or compute's
    `api_db`); `settings` gives the store (`[image] store_dir`) and the limits
    (`[api] image_size_cap`, `[image] user_storage_quota`). `ctx` is whose
    request it is: the image must be visible to it (NotFound otherwise);
    None acts as the Image service itself (sees every image). Policy is the
    caller's to check. The image must be queued (or uploading/importing);
    else Conflict (Glance's 409 wording). TooLarge (413) past the cap or the
    quota. Any failure, including an exception raised by `chunks` (client
    gone), leaves the image as it was and no file behind, and is re-raised.
    Returns the active image, with size, checksum and os_hash_*.
    """
    who = ctx or SERVICE
    directory = store_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    # The .part file exists before the image is `saving`: `recover` in another
    # process never takes a live upload for an interrupted one.
    part = directory / f"{_safe_id(image_id)}.{os.getpid()}.{uuid.uuid4().hex}{_PART}"
    part.touch(exist_ok=False)
    try:
        with db.write() as conn:
            before, room = _start(conn, image_id, who, settings)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    try:
        size, checksum, digest = _write(part, chunks, room, settings)
        os.replace(part, data_path(settings, before.id))
        with db.write() as conn:
            done = conn.execute(
                _I.update().where(_I.c.id == before.id, _I.c.status == "saving")
                .values(status="active", size=size, checksum=checksum,
                        os_hash_algo=HASH_ALGO, os_hash_value=digest,
                        updated_at=utcnow())).rowcount
            if not done:  # the handler below removes the file just renamed into place
                raise ImageGone(f"Image {before.id} could not be found after upload. "
                                "The image may have been deleted during the upload, "
                                "cleaning up the chunks uploaded.")
            return img.get(conn, before.id, SERVICE)
    except BaseException:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
        # Renamed into place but not recorded (the database failed): an image that
        # takes an upload has no data of its own, so the file is this upload's. Only
        # that file: data staged for an import stays for a retry (imports.run).
        with contextlib.suppress(FileNotFoundError):
            data_path(settings, before.id).unlink()
        _restore(db, before.id, before.status)
        raise


def open_data(db: Database, settings: Settings, image_id: str, *,
              ctx: RequestContext | None = None) -> tuple[img.Image, BinaryIO | None]:
    """The image (visible to `ctx`, else NotFound) and its data opened for reading,
    or None when it has none (not uploaded yet, or recorded without data). The
    caller closes the file; a concurrent delete does not disturb an open reader."""
    with db.read() as conn:
        image = img.get(conn, image_id, ctx or SERVICE)
    if image.status not in ("active", "deactivated"):
        return image, None
    try:
        return image, open(data_path(settings, image.id), "rb")
    except FileNotFoundError:
        return image, None


def remove(settings: Settings, image_id: str) -> None:
    """Forget an image's data and any data staged for its import (after its row is
    deleted, by whichever API or step deleted it); nothing if it had none."""
    for path in (data_path, staging_path):
        with contextlib.suppress(FileNotFoundError, ValueError):
            path(settings, image_id).unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_orphans(db: Database, directory: Path) -> None:
    """Data files whose image is gone (deleted by a process that could not remove
    the file, e.g. one with another store, or killed in between)."""
    stored = {p.name: p for p in directory.iterdir()
              if p.is_file() and not p.name.endswith(_PART) and _is_uuid(p.name)}
    if not stored:
        return
    with db.read() as conn:
        # Every id, compared lower-cased: a file is named by the id's canonical form.
        known = {str(r.id).lower() for r in conn.execute(sa.select(_I.c.id))}
    for name, path in stored.items():
        if name not in known:
            with contextlib.suppress(OSError):
                path.unlink()


def _is_uuid(name: str) -> bool:
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


def recover(db: Database, settings: Settings) -> list[str]:
    """After a crash: remove `.part` files of writers that are gone and put their
    images (and any `saving` image without a live writer) back to `queued`;
    remove data files whose image no longer exists. Returns the ids of the
    images put back. Writers are processes of this host: a store shared by
    several hosts must be recovered with all of them stopped."""
    directory = store_dir(settings)
    if directory.is_dir():
        _remove_orphans(db, directory)
    live: set[str] = set()
    for part in directory.glob(f"*{_PART}") if directory.is_dir() else ():
        image_id, _, rest = part.name.partition(".")
        pid = rest.partition(".")[0]
        if pid.isdigit() and _alive(int(pid)):
            live.add(image_id)
        else:
            with contextlib.suppress(OSError):
                part.unlink()
    with db.write() as conn:
        stuck = [r.id for r in conn.execute(sa.select(_I.c.id).where(_I.c.status == "saving"))
                 if r.id.lower() not in live]
        if stuck:
            conn.execute(_I.update().where(_I.c.id.in_(stuck), _I.c.status == "saving")
                         .values(status="queued", updated_at=utcnow()))
    return stuck
