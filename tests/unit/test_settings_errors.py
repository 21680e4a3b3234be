"""A settings file's mistakes are reported as the file spells them, and stop the start.

    [api]  keepalive_timout = 3      ->  unknown setting(s) in [api]: ['keepalive_timout']
    [apii] ...                       ->  unknown section(s) [apii]; known: [api], ...
    databse = "..."                  ->  unknown setting(s) at the top of the file
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage import config


def _load(tmp_path: Path, text: str) -> config.Settings:
    path = tmp_path / "stowage.toml"
    path.write_text(text)
    return config.load(str(path))


@pytest.mark.parametrize(("text", "where"), [
    ("[api]\nkeepalive_timout = 3\n", "[api]"),
    ("[placement]\nrandomise = true\n", "[placement]"),
    ("[compute]\nsim_host = 2\n", "[compute]"),
    ("[network]\nbase_mack = 'x'\n", "[network]"),
    ("[quota]\ninstance = 3\n", "[quota]"),
    ("[policy]\nfiles = 'x'\n", "[policy]"),
    ("[cors]\nallowed_origins = []\n", "[cors]"),
    ("[identity]\ntoken_life = 60\n", "[identity]"),
    ("[[identity.projects]]\nname = 'p'\nenable = true\n", "[[identity.projects]]"),
    ("[[identity.users]]\nname = 'u'\npassword = 'p'\nmail = 'x'\n", "[[identity.users]]"),
])
def test_a_misspelt_key_is_named_with_its_section(tmp_path: Path, text: str,
                                                  where: str) -> None:
    with pytest.raises(ValueError, match=r"unknown setting\(s\) in ") as refused:
        _load(tmp_path, text)
    assert str(refused.value).startswith(f"unknown setting(s) in {where}: ")
    assert "Settings" not in str(refused.value)  # not the class name ([ApiSettings])


def test_a_misspelt_section_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown section\(s\) \[apii\]; known: ") as refused:
        _load(tmp_path, "[apii]\nauth_strategy = 'noauth2'\n")
    assert "[api]" in str(refused.value) and "[identity]" in str(refused.value)


def test_a_misspelt_top_level_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"at the top of the file: \['databse'\]"):
        _load(tmp_path, 'databse = "sqlite:///x.db"\n')


def test_a_section_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\[api\] must be a table of settings"):
        _load(tmp_path, 'api = "noauth2"\n')


def test_every_known_section_still_loads(tmp_path: Path) -> None:
    settings = _load(tmp_path, 'database = "sqlite:///x.db"\nservices = ["placement"]\n'
                     "[api]\n[policy]\n[cors]\n[placement]\n[compute]\n[network]\n"
                     "[identity]\n[quota]\n[upgrade_levels]\ncompute = 'auto'\n")
    assert settings.services == ("placement",)
