"""Password hashes: scrypt with a random salt, in a self-describing string.

The format is `scrypt$<n>$<r>$<p>$<salt hex>$<hash hex>`, so the cost can be
raised later without breaking hashes already written into settings files.
Plain passwords are hashed as the settings are read and never kept.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets

__all__ = ["hash_password", "verify_password", "is_password_hash", "dummy_hash"]

_SCHEME = "scrypt"
# 16 MiB of memory per hash, about 50 ms: the interactive cost scrypt's paper suggests.
_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_KEY_BYTES = 32


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * n * r + 1024 * 1024, dklen=_KEY_BYTES)


def hash_password(password: str) -> str:
    """A new salted hash of `password`."""
    salt = secrets.token_bytes(_SALT_BYTES)
    key = _derive(password, salt, _N, _R, _P)
    return f"{_SCHEME}${_N}${_R}${_P}${salt.hex()}${key.hex()}"


def _parts(stored: str) -> tuple[int, int, int, bytes, bytes] | None:
    fields = stored.split("$")
    if len(fields) != 6 or fields[0] != _SCHEME:
        return None
    try:
        n, r, p = int(fields[1]), int(fields[2]), int(fields[3])
        salt, key = bytes.fromhex(fields[4]), bytes.fromhex(fields[5])
    except ValueError:
        return None
    if n < 2 or n & (n - 1) or not 0 < r <= 64 or not 0 < p <= 16 or n > 2**20:
        return None
    if not salt or len(key) != _KEY_BYTES:
        return None
    return n, r, p, salt, key


def is_password_hash(stored: str) -> bool:
    """Whether `stored` is a hash this module can verify (settings files are checked)."""
    return _parts(stored) is not None


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches `stored`, compared in constant time."""
    parts = _parts(stored)
    if parts is None:
        return False
    n, r, p, salt, key = parts
    return hmac.compare_digest(_derive(password, salt, n, r, p), key)


@functools.cache
def dummy_hash() -> str:
    """A hash of a random password nobody knows, made once per process.

    A login naming an unknown user (or one without a password) is checked
    against it, so that it costs the same scrypt as a wrong password does:
    the time of the answer does not tell which user names exist.
    """
    return hash_password(secrets.token_urlsafe(24))
