"""Checks that a case asks only for what its model provides, before anything compiles.

Each failure names the case file, the key and what the model lacks, and suggests a choice
that works.
"""
from __future__ import annotations

from .model import ModelError, did_you_mean
from .numerics.riemann import missing_hooks


def check_case_against_model(case: dict, model, where: str) -> None:
    scheme = case["scheme"]
    missing = missing_hooks(model, scheme)
    if missing:
        raise ModelError(f"{where}: [scheme] riemann = '{scheme['riemann']}' (wave_speeds = "
                         f"'{scheme['wave_speeds']}') needs the model '{model.name}' to declare "
                         f"{', '.join(missing)}; use 'hll' with 'davis' speeds, 'rusanov', 'force' or 'musta'")
    if scheme["variables"] == "characteristic":
        if "eigenvectors" not in model.functions:
            raise ModelError(f"{where}: [scheme] variables = 'characteristic' needs the model "
                             f"'{model.name}' to declare @model.eigenvectors; use 'primitive' or 'conserved'")
        if scheme["reconstruction"] == "muscl_hancock":
            raise ModelError(f"{where}: [scheme] variables = 'characteristic' does not combine with "
                             "reconstruction = 'muscl_hancock' (its predictor evolves primitive states)")
    known = list(model.primitive.names) + list(model.derived)
    for name in case["output"]["fields"]:
        if name not in known:
            raise ModelError(f"{where}: [output] fields: '{name}' is not a field of model "
                             f"'{model.name}'{did_you_mean(name, known)}; fields: {known}")
    for axis, kinds in enumerate(case["boundary"][a] for a in "xyz"[:len(case["grid"]["cells"])]):
        if "wall" in kinds and not model.velocity:
            raise ModelError(f"{where}: [boundary] {'xyz'[axis]} = 'wall' needs a model that names its "
                             "velocity (Model(velocity=...)) to reflect it")
