"""`Case`: a case file (or a dict) checked once, as the command line checks it, and never
changed afterwards: `with_` gives a new, checked Case. Immutable so that a Simulation, a
parameter study's list of cases and the run folder's case.toml all mean the same thing.

No Taichi here: a Case loads in milliseconds, and a typo fails before anything compiles.
"""
from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Union

import numpy as np

from .. import case as case_mod
from ..case_rules import unused_scheme_keys
from ..errors import CaseError
from ..region_coverage import regions_covering_no_cell
from ..resolved import NO_FILE, ResolvedCase
from ..toml_text import _value as toml_value

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["Case", "Overrides"]

# `--set`-style strings ("grid.cells=[200]"), or a mapping of dotted keys (or nested tables) to values
Overrides = Union[str, Iterable[str], Mapping[str, Any], None]


class Case:
    """A checked case: every key validated, defaults filled, as `taichiflow run` loads it.

    Build one with `Case.from_file` or `Case.from_dict`; change one with `with_`, which
    returns a new Case (this one stays as it was). `resolved` is the case as typed, frozen
    tables (taichiflow/resolved.py), built once: what a Simulation and `taichiflow run` build.
    """

    __slots__ = ("_raw", "_source", "_overrides", "_resolved")

    def __init__(self, raw: Mapping[str, Any], source: str = NO_FILE, overrides: Overrides = None):
        """Prefer from_file / from_dict. `raw`: the case as TOML gives it (before defaults),
        `source`: the file it came from (messages, relative model and raster paths)."""
        object.__setattr__(self, "_raw", copy.deepcopy(dict(raw)))
        object.__setattr__(self, "_source", str(source))
        object.__setattr__(self, "_overrides", override_strings(overrides))
        object.__setattr__(self, "_resolved", ResolvedCase.from_dict(resolve(self._raw, self._source, self._overrides)))

    # --- building ---------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | os.PathLike, overrides: Overrides = None) -> Case:
        """A case file, with overrides applied before the checks (as `--set` does); errors are
        the command line's CaseError messages, naming the file and the key."""
        resolved = case_mod.load_case(path, override_strings(overrides))  # (the CLI's own loader and messages)
        with open(path, "rb") as f:
            raw = tomllib.loads(f.read().removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
        return _restore(raw, str(path), override_strings(overrides), resolved)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], overrides: Overrides = None, *,
                  source: str | os.PathLike | None = None) -> Case:
        """A case written in Python as the TOML file's tables (`{"model": {"name": "euler"},
        "grid": {...}, ...}`), checked like a file. `source`: a path that relative model and
        raster paths are read from and messages name (default: the current folder, and
        "<case>"); a dict from `to_dict()` carries its own. Keys starting with "_" are ignored."""
        if not isinstance(data, Mapping):
            raise CaseError(f"{source or NO_FILE}: expected a table of sections, got {type(data).__name__}")
        source = str(source) if source is not None else str(data.get("_source", NO_FILE))
        raw = {k: v for k, v in data.items() if not str(k).startswith("_")}
        return cls(plain(raw), source, overrides)

    def with_(self, *overrides: str, **sections: Any) -> Case:
        """A new Case with keys changed: `with_(scheme={"cfl": 0.3}, grid={"cells": [200]})`
        (tables merged key by key; lists and values replaced) or `with_("scheme.cfl=0.3")`.
        Checked again from the case as written, so defaults that depend on the changed keys
        follow them."""
        every = self._overrides + override_strings(list(overrides)) + override_strings(sections)
        return _restore(self._raw, self._source, every, resolve(self._raw, self._source, every))  # (raw: shared)

    # --- reading ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """[case] name: the file name without .toml unless the case sets it."""
        return self._resolved.case.name

    @property
    def source(self) -> str:
        """The file the case came from ("<case>" for a dict without one)."""
        return self._source

    @property
    def overrides(self) -> tuple[str, ...]:
        """Every override applied, as `--set` strings, in order."""
        return self._overrides

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the command line would warn about (keys the scheme does not read, regions
        covering no cell)."""
        return self._resolved.warnings

    @property
    def resolved(self) -> ResolvedCase:
        """The case as typed, frozen tables (`case.resolved.scheme.cfl`; taichiflow/resolved.py)."""
        return self._resolved

    def to_dict(self) -> dict[str, Any]:
        """The resolved case (defaults filled, plus "_source"): a copy, free to change."""
        return self._resolved.as_dict()

    def to_toml(self) -> str:
        """The resolved case as TOML (what a run folder's case.toml holds, before the run
        resolves its "auto" settings)."""
        return case_mod.dump_toml(self._resolved.as_dict())

    def __setattr__(self, name, value):
        raise AttributeError(f"a Case cannot be changed ({name}): use case.with_(...) for a new one")

    def __reduce__(self):
        """Pickled as it is (a parameter study may hand cases to other processes)."""
        return _restore, (self._raw, self._source, self._overrides, self._resolved.as_dict())

    def __eq__(self, other) -> bool:
        return isinstance(other, Case) and self._resolved.as_dict() == other._resolved.as_dict()

    __hash__ = None

    def __repr__(self) -> str:
        cells = list(self._resolved.grid.cells)
        return f"Case({self.name!r}, model={self._resolved.model.name!r}, cells={cells}, source={self._source!r})"


def _restore(raw: dict, source: str, overrides: tuple, resolved) -> Case:
    """A Case of its parts; `resolved`: case.py's checked dict (or its ResolvedCase)."""
    case = Case.__new__(Case)
    for name, value in zip(Case.__slots__, (raw, source, overrides, ResolvedCase.of(resolved))):
        object.__setattr__(case, name, value)
    return case


def resolve(raw: Mapping[str, Any], source: str, overrides: tuple[str, ...]) -> dict:
    """The checks of case.load_case on a document already read: overrides, the model's own
    Riemann solvers, the schema, the warnings (tests/test_api_case.py keeps the two equal)."""
    doc = copy.deepcopy(dict(raw))
    ctx = case_mod._Context(file=source, stem=Path(source).stem if source != NO_FILE else "case")
    for text in overrides:
        ctx.overrides[case_mod.apply_override(doc, text, case_mod.SCHEMA.keys)] = text
    case_mod._declare_model_solvers(doc, Path(source))
    checked = case_mod.SCHEMA.check(doc, case_mod._Loc(ctx))
    warnings = unused_scheme_keys(doc.get("scheme", {}), checked["scheme"], case_mod.SCHEMA.keys["scheme"].spec.keys)
    warnings += regions_covering_no_cell(checked)
    return {"_source": source, **checked, **({"_warnings": warnings} if warnings else {})}


def override_strings(overrides: Overrides) -> tuple[str, ...]:
    """Overrides as `--set` strings, so that a dict's mistakes read like the command line's:
    'a.b=value' strings pass as they are; a mapping's keys are dotted paths or tables, each
    leaf value written as TOML."""
    if overrides is None:
        return ()
    if isinstance(overrides, str):
        return (overrides,)
    if isinstance(overrides, Mapping):
        return tuple(f"{key}={as_toml(key, value)}" for key, value in leaves(overrides, ()))
    return tuple(overrides)


def leaves(table: Mapping, prefix: tuple) -> list[tuple[str, Any]]:
    """(dotted key, value) of each non-table value in a nested mapping; an empty table is a value."""
    found = []
    for key, value in table.items():
        path = prefix + tuple(str(key).split("."))
        if isinstance(value, Mapping) and value:
            found += leaves(value, path)
        else:
            found.append((".".join(path), value))
    return found


def as_toml(key: str, value: Any) -> str:
    try:
        return toml_value(plain(value))
    except TypeError as err:
        raise CaseError(f"<overrides>: {key}: {err}") from None


def plain(value: Any) -> Any:
    """numpy arrays and scalars, tuples and paths as the TOML types the schema checks."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def as_case(case: Case | str | os.PathLike | Mapping[str, Any]) -> Case:
    """A Case from what a Simulation accepts: a Case, a case file's path, or a dict."""
    if isinstance(case, Case):
        return case
    if isinstance(case, (str, os.PathLike)):
        return Case.from_file(case)
    if isinstance(case, Mapping):
        return Case.from_dict(case)
    raise TypeError(f"expected a taichiflow.Case, a case file's path or a dict, got {type(case).__name__}")
