"""`--set dotted.key=value` overrides, applied to a case's raw TOML document before it is
checked (case.load_case): a value is parsed as TOML where it is one (numbers, booleans,
arrays, inline tables), else kept as a string."""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .errors import CaseError, suggest

__all__ = ["apply_override"]


def _parse_value(text: str):
    """A --set value as TOML if it parses as one value, else the plain string."""
    try:
        parsed = tomllib.loads("v = " + text)
    except tomllib.TOMLDecodeError:
        return text
    return parsed["v"] if list(parsed) == ["v"] else text


def apply_override(doc: dict, text: str, sections) -> tuple:
    """Apply one 'dotted.key=value' to the raw document in place; returns the path set.

    Missing tables are created (validation then catches unknown keys); numeric parts
    index arrays, e.g. initial.regions.0.radius; `sections` are the case's top-level tables.
    """
    if not isinstance(text, str):
        raise CaseError(f"<overrides>: expected a 'dotted.key=value' string, got {text!r}")
    key, sep, raw = text.partition("=")
    parts = [p.strip() for p in key.split(".")]
    if not sep or not all(parts):
        raise _override_error(text, "expected 'dotted.key=value'")
    if parts[0] not in sections:
        raise _override_error(text, f"unknown section '{parts[0]}'{suggest(parts[0], sections)}")
    node, path = doc, []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        part = _step(node, part, path, text, create=None if last else parts[i + 1])
        path.append(part)
        if last:
            node[part] = _parse_value(raw.strip())
        else:
            node = node[part]
    return tuple(path)


def _step(node, part: str, path: list, text: str, create):
    """The key or index `part` names in `node`, creating a missing table when `create`
    (the next part) is given and is not an index."""
    here = ".".join(map(str, path))
    if isinstance(node, list):
        if not part.isdigit():
            raise _override_error(text, f"'{here}' is an array: expected an index, got '{part}'")
        if int(part) >= len(node):
            raise _override_error(text, f"'{here}' has {len(node)} entries, so there is no index {part}")
        return int(part)
    if not isinstance(node, dict):
        raise _override_error(text, f"'{here}' is a value, not a table")
    if create is not None and part not in node:
        if create.isdigit():
            raise _override_error(text, f"there is no array '{'.'.join(map(str, path + [part]))}' to index")
        node[part] = {}
    return part


def _override_error(text: str, message: str) -> CaseError:
    return CaseError(f"<overrides>: {message} in --set '{text}'")
