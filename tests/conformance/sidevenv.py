"""A side virtualenv that holds upstream Placement's gabbi YAML files.

Why a side venv: the upstream suite is the specification we measure against,
but its files must not be copied into this repository, and upstream's Python
dependencies (oslo.*, a different SQLAlchemy pin, ...) must not leak into the
project's environment. We only need the package's *files*, so it is installed
with ``--no-deps`` into ``<repo>/.venv-conformance`` (gitignored).

``gabbits_dir()`` is idempotent and cheap once the venv exists: it only globs
for the installed directory.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

__all__ = ["PACKAGE", "REPO_ROOT", "VENV_DIR", "ensure_installed", "gabbits_dir"]

PACKAGE = "openstack-placement==16.0.0"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_DIR = REPO_ROOT / ".venv-conformance"

# placement/tests/functional/gabbits inside the venv's site-packages.
_GABBITS_GLOB = "lib/python*/site-packages/placement/tests/functional/gabbits"
_DIST_GLOB = "lib/python*/site-packages/openstack_placement-16.0.0.dist-info"


def _installed(venv: Path) -> Path | None:
    """Return the gabbits directory if the pinned package is installed."""
    if not any(venv.glob(_DIST_GLOB)):
        return None
    for found in venv.glob(_GABBITS_GLOB):
        if any(found.glob("*.yaml")):
            return found
    return None


def _install(venv: Path, requirements: list[str], no_deps: bool) -> None:
    """Create the venv (if needed) and install the pinned requirements."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         *(["--no-deps"] if no_deps else []), *requirements],
        check=True,
    )


def ensure_installed(venv: Path, requirements: list[str], dist_glob: str,
                     no_deps: bool = False) -> None:
    """Install `requirements` into `venv` once; `dist_glob` marks them installed.

    A file lock makes concurrent callers (e.g. pytest-xdist workers) wait for
    one installer instead of racing pip.
    """
    if any(venv.glob(dist_glob)):
        return
    venv.mkdir(parents=True, exist_ok=True)
    with open(venv / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not any(venv.glob(dist_glob)):
            _install(venv, requirements, no_deps)
    if not any(venv.glob(dist_glob)):
        raise RuntimeError(f"{requirements} installed into {venv} left no {dist_glob}")


def gabbits_dir(venv: Path = VENV_DIR) -> Path:
    """Ensure the side venv exists and return upstream's gabbits directory."""
    ensure_installed(venv, [PACKAGE], _DIST_GLOB, no_deps=True)
    found = _installed(venv)
    if found is None:
        raise RuntimeError(f"{PACKAGE} installed into {venv} has no gabbits")
    return found


if __name__ == "__main__":
    print(gabbits_dir())
