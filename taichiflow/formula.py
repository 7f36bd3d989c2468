"""Formulas of the coordinates in case files (`kind = "formula"` perturbations).

A case stays data: an expression such as "max(0, 0.2 - 0.05*(x - 10)**2)" is parsed once with
Python's `ast` into a small tree of whitelisted nodes (numbers, the coordinates x, y, z, the
constant pi, the model's primitive variables as set so far, + - * / **, unary signs and a
fixed list of functions) and never given to eval or exec. Anything else (other names, attributes, subscripts, comparisons, lambdas, other calls) is
refused with a message saying what is not allowed.

The same tree is evaluated by two back-ends: numpy arrays here (the host's initial state), and
Taichi expressions while a kernel compiles (kernels/initial.py), so both compute one recipe in
the same order of operations. numpy and stdlib only: no taichi.
"""
from __future__ import annotations

import ast
import functools
import math
import operator
from typing import Callable, NamedTuple

import numpy as np

from .errors import suggest

__all__ = ["COORDINATES", "FUNCTIONS", "Formula", "FormulaError", "check_variable_names", "evaluate", "evaluate_numpy",
           "parse_formula", "variable_names"]

COORDINATES = ("x", "y", "z")
CONSTANTS = {"pi": math.pi}
# name -> (fewest, most) arguments; None: any number from the fewest up
FUNCTIONS = {"min": (2, None), "max": (2, None), "abs": (1, 1), "sqrt": (1, 1), "exp": (1, 1), "log": (1, 1),
             "sin": (1, 1), "cos": (1, 1), "tan": (1, 1), "tanh": (1, 1), "atan2": (2, 2)}
_BINARY = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("*", operator.mul),
           ast.Div: ("/", operator.truediv), ast.Pow: ("**", operator.pow)}
_HINTS = {ast.BitXor: " (use ** for powers)"}


class FormulaError(ValueError):
    """An expression that is not a formula of the coordinates; the message says why."""


class Formula(NamedTuple):
    """A parsed expression: `tree` of tuples ("number", k) (k indexes `numbers`),
    ("coordinate", axis), ("negate", a), ("binary", op, a, b), ("call", name, args);
    the numbers apart so that a back-end can turn each into a typed constant once."""
    text: str
    tree: tuple
    numbers: tuple


@functools.lru_cache(maxsize=256)
def parse_formula(text: str) -> Formula:
    """The whitelisted tree of `text`, or FormulaError naming what is not allowed. Cached: the
    case check, the host and the device path share one parse per expression."""
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("expected a non-empty expression")
    try:
        node = ast.parse(text.strip(), mode="eval").body
        numbers = []
        tree = _convert(node, numbers)
    except SyntaxError as err:
        column = f" at column {err.offset}" if err.offset else ""
        raise FormulaError(f"invalid syntax{column} in {text.strip()!r}: {err.msg}") from None
    except (RecursionError, MemoryError):
        raise FormulaError("the expression is nested too deeply") from None
    except ValueError as err:  # (a null character)
        if isinstance(err, FormulaError):
            raise
        raise FormulaError(f"invalid expression: {err}") from None
    return Formula(text, tree, tuple(numbers))


def _convert(node, numbers: list) -> tuple:
    """One ast node as a tree node, its constants appended to `numbers`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        try:
            return _number(float(node.value), numbers)
        except OverflowError:
            raise FormulaError(f"the number {node.value} is too large") from None
    if isinstance(node, ast.Name):
        return _name(node.id, numbers)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _convert(node.operand, numbers)
        return ("negate", operand) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return ("binary", _BINARY[type(node.op)][0], _convert(node.left, numbers), _convert(node.right, numbers))
    if isinstance(node, ast.Call):
        return _call(node, numbers)
    raise FormulaError(f"{_describe(node)} is not allowed{_hint(node)}: an expression may use numbers, the coordinates "
                       f"x, y, z, pi, + - * / **, parentheses and the functions {', '.join(FUNCTIONS)}")


def _number(value: float, numbers: list) -> tuple:
    if not math.isfinite(value):
        raise FormulaError(f"the number {value!r} is not finite")
    numbers.append(value)
    return ("number", len(numbers) - 1)


def _name(name: str, numbers: list) -> tuple:
    if name in COORDINATES:
        return ("coordinate", COORDINATES.index(name))
    if name in CONSTANTS:
        return _number(CONSTANTS[name], numbers)
    if name in FUNCTIONS:
        raise FormulaError(f"the function '{name}' needs its arguments in parentheses")
    return ("variable", name)  # a primitive variable of the model, as set so far: checked once the model is known


def _call(node: ast.Call, numbers: list) -> tuple:
    """A call of a whitelisted function by its bare name, with positional arguments only."""
    if not isinstance(node.func, ast.Name):
        raise FormulaError(f"calling `{ast.unparse(node.func)}` is not allowed: only the functions "
                           f"{', '.join(FUNCTIONS)}, by name")
    name = node.func.id
    if name not in FUNCTIONS:
        raise FormulaError(f"unknown function '{name}'{suggest(name, FUNCTIONS)}; the functions are "
                           f"{', '.join(FUNCTIONS)}")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise FormulaError(f"{name}() takes plain positional arguments")
    fewest, most = FUNCTIONS[name]
    if len(node.args) < fewest or (most is not None and len(node.args) > most):
        wanted = f"{fewest}" if fewest == most else f"{fewest} or more"
        raise FormulaError(f"{name}() takes {wanted} argument{'s' * (wanted != '1')}, got {len(node.args)}")
    return ("call", name, tuple(_convert(a, numbers) for a in node.args))


def _describe(node) -> str:
    """What a refused node is, in words, with its source text where ast can give it back."""
    words = {ast.Attribute: "attribute access", ast.Subscript: "a subscript", ast.Lambda: "a lambda",
             ast.Compare: "a comparison", ast.BoolOp: "and/or", ast.IfExp: "if/else", ast.Constant: "the constant",
             ast.UnaryOp: "the operator", ast.BinOp: "the operator", ast.Call: "a call",
             ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict"}
    what = words.get(type(node), type(node).__name__)
    try:
        return f"{what} `{ast.unparse(node)}`"
    except Exception:  # noqa: BLE001  (the words alone then)
        return what


def _hint(node) -> str:
    """What to write instead, where an operator has a near miss."""
    return _HINTS.get(type(node.op), "") if isinstance(node, ast.BinOp) else ""


# --- evaluation --------------------------------------------------------------------------

def variable_names(formula: Formula) -> list[str]:
    """The names in `formula` that are neither coordinates nor constants: the model's
    primitive variables it reads (each at the same point, as the earlier steps set it)."""
    found = []

    def walk(node):
        if node[0] == "variable" and node[1] not in found:
            found.append(node[1])
        for child in node[1:]:
            if isinstance(child, tuple):
                if child and isinstance(child[0], str):
                    walk(child)
                else:
                    for item in child:
                        walk(item)

    walk(formula.tree)
    return found


def check_variable_names(formula: Formula, known) -> None:
    """FormulaError for a name that is not one of `known` (the model's primitive scalars and
    vector components)."""
    for name in variable_names(formula):
        if name not in known:
            raise FormulaError(f"unknown name '{name}'{suggest(name, [*COORDINATES, *CONSTANTS, *known])}: an "
                               f"expression may name the coordinates x, y, z, pi and the model's primitive "
                               f"variables {', '.join(known)}")


def evaluate(formula: Formula, coordinates, numbers, functions: dict, variables=None):
    """The value of `formula` with back-end values: `coordinates` (x, y, z), `numbers` (the
    formula's constants, each already a back-end value) and `functions` (name -> callable; min
    and max take two arguments and are folded left to right). Plain Python, so that Taichi
    values build a kernel's IR while it compiles, and numpy arrays compute on the host."""
    def value(node):
        kind = node[0]
        if kind == "number":
            return numbers[node[1]]
        if kind == "coordinate":
            return coordinates[node[1]]
        if kind == "variable":
            return variables(node[1])
        if kind == "negate":
            return -value(node[1])
        if kind == "binary":
            return _BINARY_OPS[node[1]](value(node[2]), value(node[3]))
        args = [value(a) for a in node[2]]
        return functools.reduce(functions[node[1]], args) if node[1] in ("min", "max") else functions[node[1]](*args)

    return value(formula.tree)


_BINARY_OPS: dict[str, Callable] = {symbol: op for symbol, op in _BINARY.values()}

NUMPY_FUNCTIONS = {"min": np.minimum, "max": np.maximum, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp,
                   "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
                   "atan2": np.arctan2}


def evaluate_numpy(formula: Formula, x, y, z, variables=None) -> np.ndarray:
    """The formula on arrays of coordinates (and variables: name -> array of the same shape),
    as float64 of their broadcast shape. Numbers are numpy float64, so a division by zero
    gives inf (as on the device), never a Python error."""
    numbers = [np.float64(v) for v in formula.numbers]
    value = evaluate(formula, (x, y, z), numbers, NUMPY_FUNCTIONS, variables)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), np.broadcast(x, y, z).shape)
