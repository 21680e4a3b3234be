"""oslo.log's options of placement.conf applied to the process's log (cli._log_setup).

`--log-level` wins over `[DEFAULT] debug`; `log_config_append` hands the log
to a logging configuration file; what the file ignores is reported by the
`serve` parent only, not again by each `--workers` process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from stowage import cli
from stowage.placement_conf import LogOptions, PlacementConf


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


def _conf(**log: object) -> PlacementConf:
    conf = PlacementConf("p.conf", log=LogOptions(**log))  # type: ignore[arg-type]
    conf.notes.append((logging.WARNING, "p.conf:3: unknown option [api] x ignored"))
    return conf


def test_the_flag_wins_over_debug(caplog: pytest.LogCaptureFixture) -> None:
    assert cli._log_setup(None, _conf(debug=True)) == "debug"
    assert logging.getLogger().level == logging.DEBUG
    assert cli._log_setup("warning", _conf(debug=True)) == "warning"
    assert cli._log_setup(None, _conf(debug=False)) == "info"
    assert cli._log_setup(None, None) == "info"


def test_notes_are_reported_by_the_parent_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="stowage.placement_conf"):
        cli._log_setup("info", _conf(), report=False)
        assert "unknown option" not in caplog.text
        cli._log_setup("info", _conf())
    assert caplog.text.count("p.conf:3: unknown option [api] x ignored") == 1


def test_log_config_append_configures_the_log(tmp_path: Path) -> None:
    target = tmp_path / "out.log"
    config = tmp_path / "logging.conf"
    config.write_text(f"""\
[loggers]
keys = root

[handlers]
keys = file

[formatters]
keys = plain

[logger_root]
level = INFO
handlers = file

[handler_file]
class = FileHandler
args = ({str(target)!r},)
formatter = plain

[formatter_plain]
format = PLAIN %(name)s %(message)s
""")
    cli._log_setup(None, _conf(log_config_append=str(config)))
    logging.getLogger("stowage.test").info("hello")
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert "PLAIN stowage.test hello" in target.read_text()
    assert "PLAIN stowage.placement_conf p.conf:3: unknown option" in target.read_text()


def test_an_unreadable_log_config_stops_the_start(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli._log_setup(None, _conf(log_config_append=str(tmp_path / "missing.conf")))
    assert exited.value.code == 2
    assert "cannot read [DEFAULT] log_config_append" in capsys.readouterr().err
