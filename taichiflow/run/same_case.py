"""Whether a restart continues the case its checkpoint was written by: the resolved case kept in
the checkpoint against the resolved case being run, key by key.

A restart must compute the steps the stopped run would have computed. So a key may differ
only if it says how far the run goes, what it records or how fast it computes (FREE); keys
that change the steps from the restart on, or the fields of the series, only when named with
`--allow-change` (ON_REQUEST: a lower cfl after a blow-up); the physics, the initial and
boundary data, the grid and the precision never (the state would not be what the case says).
docs/cases.md ("Restarts") lists them for users.
"""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .. import case as case_mod
from ..errors import CaseError, CheckpointError, did_you_mean

FREE = ("case.name", "case.description", "case.units",            # labels
        "time.end", "time.max_steps",               # how far the run goes
        "output.diagnostics_every", "output.checkpoint_interval", "output.checkpoint_wall",  # what it records
        "run.segment", "run.block_dim", "run.keep_last_good", "amr.capacity", "amr.grow",  # how fast, in how much memory: same numbers
        "amr.rebalance_above",                      # how the leaves are shared among ranks: the same states
        "parallel.ranks", "parallel.exchange")      # how many ranks share the grid, how they talk: the same states
ON_REQUEST = ("scheme",                             # another flux, limiter, cfl: other steps
              "run.arch", "run.fast_math", "run.reconstruct", "run.shuffle", "run.fuse",  # other rounding
              "output.interval",                    # steps are cut to land on output times
              "output.fields")                      # snapshots of one series with other fields
# Compared as the loaded model's name and file hash (run/restart.py identity), not as spelled.
COMPARED_ELSEWHERE = ("model.name",)
SHOWN = 6  # differing keys named in a refusal; the rest are counted


def _under(key: str, prefixes) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def check_allowed(keys) -> tuple:
    """The --allow-change keys, refused where a restart may never change them (or no such key)."""
    known = {".".join(path) for path in case_mod.schema_entries()}
    for key in keys:
        if not _under(key, ON_REQUEST + FREE):
            raise CaseError(f"--allow-change {key}: only [scheme] keys, {', '.join(ON_REQUEST[1:])} may change on "
                            f"restart on request ({', '.join(FREE)} may change without it); the model, its "
                            f"parameters, the materials, the grid, the precision, the initial and boundary data never")
        if key not in known and key not in ON_REQUEST:
            raise CaseError(f"--allow-change {key}: no such case key{did_you_mean(key, known)}")
    return tuple(keys)


def flatten(table: dict, prefix: str = "") -> dict:
    """Dotted key -> value; arrays of tables by index (initial.regions.0.state.rho)."""
    flat = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, path + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                flat.update(flatten(item, f"{path}.{i}."))
        else:
            flat[path] = value
    return flat


def differences(old: dict, new: dict) -> dict:
    """Dotted key -> (old, new) where two resolved cases differ (None: absent on that side)."""
    a, b = flatten(old), flatten(new)
    keys = sorted(set(a) | set(b), key=lambda k: (k.split(".")[0], k))
    return {k: (a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k) and not _under(k, COMPARED_ELSEWHERE)}


def _shown(key: str, pair: tuple) -> str:
    def one(value):
        return "absent" if value is None else case_mod.show(value)
    return f"{key}: {one(pair[0])} in the checkpoint, {one(pair[1])} now"


def _listed(diffs: dict) -> str:
    shown = [_shown(k, v) for k, v in list(diffs.items())[:SHOWN]]
    more = len(diffs) - SHOWN
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def check_same_case(header: dict, case: dict, allowed, path) -> list[str]:
    """Refuse (CheckpointError naming the keys) a checkpoint written by another case; return
    the log lines of the keys that changed as allowed."""
    if "case" not in header:
        raise CheckpointError(f"{path}: the checkpoint records no case, so nothing proves it belongs to this one")
    old = tomllib.loads(header["case"])
    new = tomllib.loads(case_mod.dump_toml(case))   # compared as written: both through the same TOML
    diffs = differences(old, new)
    fixed = {k: v for k, v in diffs.items() if not _under(k, FREE + tuple(allowed))}
    never = {k: v for k, v in fixed.items() if not _under(k, ON_REQUEST)}
    on_request = {k: v for k, v in fixed.items() if k not in never}
    flags = " ".join(f"--allow-change {k}" for k in on_request)
    if never:
        also = f". Also differing: {_listed(on_request)} (may change with {flags})" if on_request else ""
        raise CheckpointError(f"{path}: the checkpoint belongs to another case: {_listed(never)}. A restart "
                              f"continues the same physics, initial and boundary data, grid and precision: run "
                              f"this case anew (--out another folder, or --overwrite){also}")
    if on_request:
        raise CheckpointError(f"{path}: {_listed(on_request)}: this changes the steps from the restart on, so the "
                              f"run would not continue as it was computed; to continue with it on purpose add {flags}")
    return [(f"continuing with a changed {_shown(k, v)}" if _under(k, ON_REQUEST) else f"changed since the "
             f"checkpoint: {_shown(k, v)}") for k, v in diffs.items()]
