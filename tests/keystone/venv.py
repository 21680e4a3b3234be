"""The side virtualenv `<repo>/.venv-keystone` holding PyPI keystone and gunicorn.

Why a side venv: Keystone is the peer stowage authenticates against, not a
dependency; its oslo.* stack and its own SQLAlchemy pin must not leak into
the project's environment. Installed once on demand, under the file lock of
`tests.conformance.sidevenv.ensure_installed` (xdist workers wait for one pip).
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.sidevenv import REPO_ROOT, ensure_installed

__all__ = ["KEYSTONE_VERSION", "PACKAGES", "VENV_DIR", "ensure"]

KEYSTONE_VERSION = "30.0.0"
# gunicorn serves Keystone's WSGI application (keystone.wsgi.api), as
# devstack's uwsgi does; gunicorn needs no compiler to install.
PACKAGES = [f"keystone=={KEYSTONE_VERSION}", "gunicorn==27.0.1"]
VENV_DIR = REPO_ROOT / ".venv-keystone"
_DIST_GLOB = f"lib/python*/site-packages/keystone-{KEYSTONE_VERSION}.dist-info"
_GUNICORN_GLOB = "lib/python*/site-packages/gunicorn-27.0.1.dist-info"


def ensure(venv: Path = VENV_DIR) -> Path:
    """Install Keystone into the side venv if needed; return the venv's bin directory."""
    ensure_installed(venv, PACKAGES, _DIST_GLOB)
    ensure_installed(venv, PACKAGES[1:], _GUNICORN_GLOB)
    return venv / "bin"


if __name__ == "__main__":
    print(ensure())
