"""Read an INI file as oslo.config reads it, without oslo.config.

Operators keep the `placement.conf` they already have (docs/placement-conf.md),
so its syntax must mean here what it means to oslo.config:

- `[section]` headers; names are compared in lower case, except `DEFAULT`;
  a section may appear several times and its options add up.
- `key = value` or `key: value` (whichever separator comes first); the value
  is stripped and one pair of matching surrounding quotes removed.
- A line starting with a space or tab continues the previous value (joined
  with a newline); a blank line ends it.
- `#` and `;` start a comment only at the start of a line: `a = b # c` is
  the value `b # c`, as upstream.
- An option given twice keeps the last value.
- `$name` / `${name}` is replaced by the option `name` of the same section,
  else of `[DEFAULT]`; `$section.name` names another section (not DEFAULT);
  `$$` and `\\$` are a literal `$`; `$5` (not a name) stays as it is. As in
  oslo.config, this happens when a value is read.

Values stay strings until read with a type (`boolean`, `integer`, `strings`,
`choice`), which accepts what oslo.config's types accept; a value they refuse
is an `IniError` naming the file, line, section and option.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Entry", "IniError", "IniFile", "boolean", "choice", "integer", "parse",
           "read", "strings"]

TRUE = ("true", "1", "on", "yes")
FALSE = ("false", "0", "off", "no")


class IniError(ValueError):
    """A file oslo.config would refuse, or a value its types would refuse."""


@dataclass(frozen=True)
class Entry:
    """One option's raw value and where the file set it (the last time)."""

    value: str
    line: int


class _Template(string.Template):
    # oslo.config's pattern: a dotted name reaches into another section.
    idpattern = r"[_a-z][\._a-z0-9]*"


class _Refs(Mapping[str, str]):
    """What `$name` stands for, looked up only when the template names it."""

    def __init__(self, resolve: Callable[[str], str]) -> None:
        self._resolve = resolve

    def __getitem__(self, ref: str) -> str:
        return self._resolve(ref)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _section_name(name: str) -> str:
    return name if name == "DEFAULT" else name.lower()


@dataclass
class IniFile:
    """The parsed file: section -> option -> Entry, in the order the file gives them."""

    path: str
    sections: dict[str, dict[str, Entry]]

    def get(self, section: str, key: str) -> str | None:
        """The value with `$` references replaced, None when the file does not set it."""
        entry = self.sections.get(section, {}).get(key)
        if entry is None:
            return None
        return self._substitute(section, key, entry, ())

    def where(self, section: str, key: str) -> str:
        """`file:line: [section] key` for messages about this option."""
        entry = self.sections.get(section, {}).get(key)
        line = f":{entry.line}" if entry else ""
        return f"{self.path}{line}: [{section}] {key}"

    def options(self) -> Iterator[tuple[str, str, Entry]]:
        for section, entries in self.sections.items():
            for key, entry in entries.items():
                yield section, key, entry

    def _lookup(self, section: str, ref: str) -> tuple[str, str] | None:
        """Where `$ref` points: a dotted name is section.option, a bare one is looked
        up in the same section, then in [DEFAULT] (oslo.config's order)."""
        if "." in ref:
            # oslo.config knows no group named DEFAULT: `$DEFAULT.x` resolves nowhere.
            group, _, key = ref.partition(".")
            candidates = [(_section_name(group), key)] if group != "DEFAULT" else []
        else:
            candidates = [(section, ref), ("DEFAULT", ref)]
        for found in candidates:
            if found[1] in self.sections.get(found[0], {}):
                return found
        return None

    def _substitute(self, section: str, key: str, entry: Entry,
                    seen: tuple[tuple[str, str], ...]) -> str:
        if (section, key) in seen:
            raise IniError(f"{self.where(section, key)}: template substitution error: "
                           f"${key} refers to itself")
        text = entry.value.replace("\\$", "$$")
        chain = seen + ((section, key),)

        def resolve(ref: str) -> str:
            found = self._lookup(section, ref)
            if found is None:
                raise IniError(f"{self.where(section, key)}: template substitution error: "
                               f"no option named {ref!r} for ${ref}")
            return self._substitute(*found, self.sections[found[0]][found[1]], chain)

        return _Template(text).safe_substitute(_Refs(resolve))


def parse(lines: Iterable[str], path: str = "<string>") -> IniFile:
    """The file's sections and options; a line oslo.config's parser refuses is an error."""
    sections: dict[str, dict[str, Entry]] = {}
    current: str | None = None
    pending: tuple[str, list[str], int] | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            key, parts, at = pending
            if current is None:
                raise IniError(f"{path}:{at}: section must be started before assignment")
            sections[current].pop(key, None)  # keep file order of the last setting
            sections[current][key] = Entry("\n".join(parts), at)
            pending = None

    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line:
            flush()
            continue
        if line[0] in " \t":
            if pending is None:
                raise IniError(f"{path}:{number}: unexpected continuation line: {line!r}")
            pending[1].append(line.lstrip())
            continue
        flush()
        if line.startswith("["):
            if not line.endswith("]") or len(line) <= 2:
                raise IniError(f"{path}:{number}: invalid section header: {line!r}")
            current = _section_name(line[1:-1])
            sections.setdefault(current, {})
        elif not line.startswith(("#", ";")):
            key, value = _split(line, path, number)
            pending = (key, [value], number)
    flush()
    return IniFile(path, sections)


def _split(line: str, path: str, number: int) -> tuple[str, str]:
    """`key = value` or `key: value`, the first separator winning, as oslo.config."""
    at = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    if at < 0:
        raise IniError(f"{path}:{number}: no ':' or '=' found in assignment: {line!r}")
    key, value = line[:at].strip(), line[at + 1:].strip()
    if not key:
        raise IniError(f"{path}:{number}: key cannot be empty: {line!r}")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return key, value


def read(path: str) -> IniFile:
    """Parse the file at `path` (OSError when it cannot be read)."""
    text = Path(path).read_text(encoding="utf-8")
    return parse(text.splitlines(), path)


# -- types, as oslo_config.types parses them ---------------------------------------

def boolean(value: str) -> bool:
    lowered = value.lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"unexpected boolean value {value!r} (true/false, yes/no, on/off, 1/0)")


def integer(value: str) -> int | None:
    """An integer; empty means unset (None), as oslo.config's Integer type."""
    text = value.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{value!r} is not an integer") from None


def strings(value: str) -> list[str]:
    """A comma-separated list (a trailing comma ignored), items stripped."""
    text = value.strip().rstrip(",")
    return [item.strip() for item in text.split(",")] if text else []


def choice(*allowed: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"valid values are [{', '.join(allowed)}], but found {value!r}")
        return value
    return check

