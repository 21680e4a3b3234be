"""The side venv `.venv-nova`: Nova 34.0.0 with its functional tests.

Why a side venv: Nova's tests need Nova's whole dependency tree (oslo.*,
eventlet, upstream Placement for its fixture, Nova's test requirements),
none of which may leak into the project's environment. SQLAlchemy stays
below 2.1 there: Nova's warnings fixture turns a 2.1 deprecation into an
error. Nova's wheel lacks `etc/nova/api-paste.ini`, which its API fixture
loads from `$pybasedir/etc/nova/` (pybasedir is site-packages); the file is
taken from Nova's own sdist of the same version.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tests.conformance.sidevenv import REPO_ROOT, ensure_installed

__all__ = ["NOVA", "VENV", "ensure_environment", "python"]

NOVA = "nova==34.0.0"
VENV = REPO_ROOT / ".venv-nova"
REQUIREMENTS = [
    NOVA, "openstack-placement==16.0.0", "SQLAlchemy<2.1",
    # Nova's test-requirements.txt, without linters and coverage.
    "fixtures", "testtools", "testscenarios", "testresources", "oslotest", "stestr",
    "wsgi-intercept", "osprofiler", "requests-mock", "ddt", "python-barbicanclient",
    "python-ironicclient",
]
_DIST_GLOB = "lib/python*/site-packages/nova-34.0.0.dist-info"
_PASTE = "etc/nova/api-paste.ini"


def python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    if not found:
        raise RuntimeError(f"{venv} has no site-packages")
    return found[0]


def _fetch_paste_ini(venv: Path, target: Path) -> None:
    """Copy api-paste.ini out of Nova's sdist (pip download, no build)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(python(venv)), "-m", "pip", "download", "--quiet",
                        "--disable-pip-version-check", "--no-deps", "--no-binary", ":all:",
                        "-d", tmp, NOVA], check=True)
        sdist = next(Path(tmp).glob("nova-*.tar.gz"))
        with tarfile.open(sdist) as archive:
            member = next(m for m in archive.getmembers() if m.name.endswith("/" + _PASTE))
            data = archive.extractfile(member)
            assert data is not None
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.read())


def ensure_environment(venv: Path = VENV) -> Path:
    """Install the side venv once (about a minute); return its python."""
    ensure_installed(venv, REQUIREMENTS, _DIST_GLOB)
    paste = _site_packages(venv) / _PASTE
    if not paste.exists():
        with open(venv / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not paste.exists():
                _fetch_paste_ini(venv, paste)
    return python(venv)


if __name__ == "__main__":
    print(ensure_environment(), file=sys.stdout)
