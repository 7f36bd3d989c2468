"""The valid ranges a model declares for its parameters (`Model(ranges={"gamma": "> 1"})`),
checked when a case sets them: a ratio of specific heats of 0.5 or a negative gravity runs
and gives nonsense (or NaN many steps later, blamed on the scheme), so it is refused by name
before anything is built.

A range is one condition or a tuple of them, each "<op> <number>" with op one of >, >=, <, <=.
Taichi-free: the case checks and `taichiflow models` read them.
"""
from __future__ import annotations

import operator

from .errors import ModelError

_OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def parse_ranges(ranges: dict | None, params: dict, where: str) -> dict:
    """{name: ((op text, bound), ...)} from a model's declaration; ModelError naming a range
    of no parameter or a condition that does not read as '<op> <number>'."""
    parsed = {}
    for name, conditions in (ranges or {}).items():
        if name not in params:
            raise ModelError(f"{where}: ranges: '{name}' is not a parameter of the model (it has "
                             f"{sorted(params) or 'none'})")
        conditions = (conditions,) if isinstance(conditions, str) else tuple(conditions)
        parsed[name] = tuple(_condition(text, f"{where}: ranges['{name}']") for text in conditions)
    return parsed


def _condition(text, where: str) -> tuple:
    if isinstance(text, str):
        for op in _OPERATORS:  # (two-character operators first)
            if text.strip().startswith(op):
                try:
                    return op, float(text.strip()[len(op):])
                except ValueError:
                    break
    raise ModelError(f"{where}: expected a condition such as '> 1' or '>= 0', got {text!r}")


def describe(conditions: tuple) -> str:
    """'> 1 and <= 2'."""
    return " and ".join(f"{op} {bound:g}" for op, bound in conditions)


def check_params(values: dict, ranges: dict, model_name: str, where: str) -> None:
    """ModelError naming the first parameter outside its declared range."""
    for name, conditions in ranges.items():
        value = values[name]
        if not all(_OPERATORS[op](value, bound) for op, bound in conditions):
            raise ModelError(f"{where}: {name} = {value:g} is outside the range model '{model_name}' declares for "
                             f"it: {name} must be {describe(conditions)}")
