"""Run many `openstack` commands in one process: the CLI's own entry point, imported once.

`openstack` spends about a second importing its plug-ins before it sends
anything; the CLI test modules run a few hundred commands. This process
imports `openstackclient.shell` once and, for each request, forks a child
that does what the `openstack` console script does --
`OpenStackShell().run(argv)` -- with the request's `OS_*` environment, its
output captured, and stdin at /dev/null (not a terminal, as for the
subprocess the tests used before). Requests and
answers are JSON lines on the two pipes named by `OSC_RUNNER_FDS`
("read,write"), so that the commands' stdin stays /dev/null.

    {"argv": [...], "env": {"OS_TOKEN": ...}}  ->  {"rc": 0, "stdout": "...", "stderr": "..."}
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import Any


def _run(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    from openstackclient import shell

    # Only the request's OS_* settings, not those of the shell that started pytest.
    for key in [k for k in os.environ if k.startswith("OS_")]:
        del os.environ[key]
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = shell.OpenStackShell().run(argv)
        except SystemExit as exc:  # argparse's usage errors, as the console script exits
            rc = exc.code if isinstance(exc.code, int) else 1
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> int:
    read_fd, write_fd = (int(fd) for fd in os.environ["OSC_RUNNER_FDS"].split(","))
    with open(read_fd, encoding="utf-8") as requests, \
            open(write_fd, "w", encoding="utf-8") as answers:
        from openstackclient import shell  # noqa: F401 -- the second of importing, once

        answers.write(json.dumps({"ready": True}) + "\n")
        answers.flush()
        for line in requests:
            request = json.loads(line)
            answers.write(_forked(request["argv"], request["env"]) + "\n")
            answers.flush()
    return 0


def _forked(argv: list[str], env: dict[str, str]) -> str:
    """`_run` in a child forked for this one command: every command starts from the state
    right after the import, as a new `openstack` process would (the CLI and its SDK keep
    module-level state -- sessions, discovered endpoints -- that would leak between
    commands aimed at different servers)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer on the pipe, exit without running the parent's cleanup
        os.close(read_fd)
        try:
            answer = json.dumps(_run(argv, env))
        except BaseException as exc:  # noqa: BLE001 -- reported to the test, not lost
            answer = json.dumps({"rc": 1, "stdout": "", "stderr": f"runner: {exc!r}"})
        with os.fdopen(write_fd, "w", encoding="utf-8") as out:
            out.write(answer)
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, encoding="utf-8") as child:
        answer = child.read()
    os.waitpid(pid, 0)
    return answer or json.dumps({"rc": 1, "stdout": "", "stderr": "runner: the child died"})


if __name__ == "__main__":
    sys.exit(main())
