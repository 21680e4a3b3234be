"""The side virtualenv that holds real upstream Placement 16.0.0.

Why a side venv: the benchmark compares stowage against the implementation it
re-implements, but upstream's dependencies (oslo.*, its own SQLAlchemy pin,
psycopg2) must not leak into the project's environment. It lives at
``<repo>/.venv-upstream`` (gitignored). Creating it takes a few minutes the
first time; afterwards ``ensure()`` only checks a marker and returns.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

__all__ = ["PACKAGES", "VENV_DIR", "ensure"]

REPO_ROOT = Path(__file__).resolve().parents[1]
VENV_DIR = REPO_ROOT / ".venv-upstream"
# psycopg2: upstream reads cursor.lastrowid, which psycopg (3) lacks.
PACKAGES = ("openstack-placement==16.0.0", "gunicorn", "psycopg2-binary", "pymysql")
_MARKER = ".bench-installed"


def _ready(venv: Path) -> bool:
    marker = venv / _MARKER
    return (marker.exists() and marker.read_text().split() == list(PACKAGES)
            and (venv / "bin" / "gunicorn").exists())


def _install(venv: Path) -> None:
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"bench: creating virtualenv {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"bench: installing {' '.join(PACKAGES)} into {venv} "
          "(slow the first time) ...", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--progress-bar", "off",
                    "--disable-pip-version-check", *PACKAGES], check=True)
    (venv / _MARKER).write_text("\n".join(PACKAGES) + "\n")
    print("bench: upstream virtualenv ready", flush=True)


def ensure(venv: Path = VENV_DIR) -> Path:
    """Create/complete the side venv if needed; return its directory.

    Idempotent; a file lock makes a second concurrent run wait instead of
    racing pip.
    """
    if _ready(venv):
        return venv
    venv.mkdir(parents=True, exist_ok=True)
    with open(venv / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(venv):
            _install(venv)
    return venv


if __name__ == "__main__":
    print(ensure())
