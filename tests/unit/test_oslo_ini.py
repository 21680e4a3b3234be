"""The INI syntax of oslo.config files, as oslo.config reads it (stowage/oslo_ini.py).

    [API]                      ->  section "api" (names compare in lower case)
    a = one                    ->  "one\\ntwo": an indented line continues a value
      two
    b = x # not a comment      ->  "x # not a comment"
    c = $b/and                 ->  "$b" is [api] b, else [DEFAULT] b
"""

from __future__ import annotations

import textwrap

import pytest

from stowage.oslo_ini import IniError, boolean, choice, integer, parse, strings


def test_sections_options_and_values_as_oslo_config_reads_them() -> None:
    ini = parse(textwrap.dedent("""\
        # a comment
        ; another
        [DEFAULT]
        debug = True

        [API]
        auth_strategy: noauth2
        url = http://h:5000/v3
        multi = first
          second
        \tthird

        after = "quoted value"
        inline = value # stays
        empty =
        [api]
        url = http://later
        """).splitlines(), "test.conf")
    assert set(ini.sections) == {"DEFAULT", "api"}
    api = ini.sections["api"]
    assert ini.get("api", "auth_strategy") == "noauth2"
    assert ini.get("api", "url") == "http://later"  # the last setting wins
    assert api["url"].line == 17
    assert ini.get("api", "multi") == "first\nsecond\nthird"
    assert ini.get("api", "after") == "quoted value"
    assert ini.get("api", "inline") == "value # stays"
    assert ini.get("api", "empty") == ""
    assert ini.get("api", "missing") is None
    assert ini.get("nowhere", "x") is None


def test_the_first_separator_splits_key_and_value() -> None:
    ini = parse(["[s]", "url = http://h:80/x", "a: b = c"])
    assert ini.get("s", "url") == "http://h:80/x"
    assert ini.get("s", "a") == "b = c"


def test_default_keeps_its_case_other_sections_do_not() -> None:
    ini = parse(["[default]", "a = 1", "[DEFAULT]", "b = 2", "[Placement]", "c = 3"])
    assert set(ini.sections) == {"default", "DEFAULT", "placement"}


def test_interpolation_looks_in_the_section_then_default_then_dotted_names() -> None:
    ini = parse(textwrap.dedent("""\
        [DEFAULT]
        state_path = /var/lib/placement
        host = db
        [placement_database]
        host = localdb
        connection = mysql+pymysql://p:s@${host}/placement
        lock = $state_path/lock
        other = ${placement_database.host}-$host
        cost = 5$$ and \\$HOME and $5
        """).splitlines())
    assert ini.get("placement_database", "connection") == "mysql+pymysql://p:s@localdb/placement"
    assert ini.get("placement_database", "lock") == "/var/lib/placement/lock"
    assert ini.get("placement_database", "other") == "localdb-localdb"
    assert ini.get("placement_database", "cost") == "5$ and $HOME and $5"


def test_an_unknown_or_circular_reference_names_the_option() -> None:
    ini = parse(["[DEFAULT]", "x = 1", "[s]", "a = $nothing", "b = $c", "c = $b",
                 "d = $DEFAULT.x"], "p.conf")
    with pytest.raises(IniError, match=r"p.conf:4: \[s\] a: .*no option named 'nothing'"):
        ini.get("s", "a")
    with pytest.raises(IniError, match=r"no option named 'DEFAULT.x'"):
        ini.get("s", "d")  # oslo.config has no group named DEFAULT
    with pytest.raises(IniError, match="refers to itself"):
        ini.get("s", "b")


@pytest.mark.parametrize(("lines", "message"), [
    (["a = 1"], r"x.conf:1: section must be started before assignment"),
    (["[s]", "no separator"], r"x.conf:2: no ':' or '=' found"),
    (["[s]", " = v"], r"x.conf:2: unexpected continuation line"),
    (["[s]", "= v"], r"x.conf:2: key cannot be empty"),
    (["  indented first"], r"x.conf:1: unexpected continuation line"),
    (["[s", "a = 1"], r"x.conf:1: invalid section header"),
    (["[]"], r"x.conf:1: invalid section header"),
])
def test_a_malformed_line_is_an_error_with_its_line(lines: list[str], message: str) -> None:
    with pytest.raises(IniError, match=message):
        parse(lines, "x.conf")


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ("True", True), ("YES", True), ("on", True), ("1", True),
    ("false", False), ("False", False), ("no", False), ("OFF", False), ("0", False),
])
def test_booleans_as_oslo_config(text: str, value: bool) -> None:
    assert boolean(text) is value


@pytest.mark.parametrize("text", ["", "maybe", "2", "t", "y"])
def test_other_booleans_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="unexpected boolean value"):
        boolean(text)


def test_integers_lists_and_choices() -> None:
    assert integer(" 42 ") == 42
    assert integer("-1") == -1
    assert integer("") is None  # unset, as oslo.config's Integer
    with pytest.raises(ValueError, match="is not an integer"):
        integer("12abc")
    assert strings("a:11211, b:11211,") == ["a:11211", "b:11211"]
    assert strings("  ") == []
    pick = choice("depth-first", "breadth-first")
    assert pick("breadth-first") == "breadth-first"
    with pytest.raises(ValueError, match=r"valid values are \[depth-first, breadth-first\]"):
        pick("sideways")
