"""Values and tables as TOML text: the 'got ...' part of case messages, and the resolved case
written back out (run.log, the run folder's case.toml). Stdlib only."""
from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping

__all__ = ["dump_toml", "show"]


def show(value) -> str:
    """A value as TOML spells it, shortened: the 'got ...' part of messages."""
    try:
        text = _value(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- TOML values (for messages and dump_toml) ---------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes; TOML also bans raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value) -> str:
    """One TOML value, inline (floats exactly, via repr)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        x = float(value)
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf") if math.isinf(x) else repr(x)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_value, value)) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in _visible(value)) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} as TOML")


def _visible(table: Mapping):
    return [(k, v) for k, v in table.items() if not str(k).startswith("_")]


# --- writing -------------------------------------------------------------------------------

def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _as_section(value, top: bool) -> bool:
    """Top-level tables and tables holding tables get a [header]; leaf tables (states,
    params) are written inline."""
    return isinstance(value, Mapping) and (
        top or any(isinstance(v, Mapping) or _is_table_array(v) for _, v in _visible(value)))


def _write_table(lines: list, table: Mapping, path: tuple):
    later = []
    for key, value in _visible(table):
        if _as_section(value, top=not path) or _is_table_array(value):
            later.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in later:
        name = ".".join(map(_key, path + (key,)))
        for item in [value] if isinstance(value, Mapping) else value:
            lines += ["", f"[{name}]" if isinstance(value, Mapping) else f"[[{name}]]"]
            _write_table(lines, item, path + (key,))


def dump_toml(case: Mapping) -> str:
    """The resolved case as TOML (keys starting with '_' skipped); reloads to an equal dict,
    so a run can record exactly what it ran."""
    lines: list[str] = []
    _write_table(lines, case, ())
    return "\n".join(lines).strip() + "\n"
