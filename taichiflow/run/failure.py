"""What a failed run says: where the state went bad, in which variable, and what to change."""
from __future__ import annotations

import numpy as np

from .. import checkpoint
from .. import registry


def bad_cell_message(model, w, cell, when: str) -> str:
    """'inadmissible <when> at cell (i, j, k): <the first bad variable and why>'."""
    names = model.primitive.component_names()
    variable = next((f"{n} = {v!r}" for n, v in zip(names, w) if not np.isfinite(v)), None)
    if variable is None:
        variable = next((f"{n} = {w[model.primitive.index(n)]!r} (must be > 0)"
                         for n in model.positive if not w[model.primitive.index(n)] > 0),
                        f"the model's admissible() is false for {dict(zip(names, w))}")
    return f"inadmissible {when} at cell {cell}: {variable}"


def advice(scheme: dict, out_dir) -> str:
    """The likely fixes for a blow-up, given what the case already does (the registry says
    which schemes are the robust ones)."""
    tips = [f"a lower [scheme] cfl (now {scheme['cfl']:g})"]
    if not scheme["positivity_fallback"]:
        tips.append("[scheme] positivity_fallback = true")
    if not registry.is_diffusive(scheme):
        tips.append("a more diffusive scheme (plm with minmod, hll)")
    text = "Try " + ", or ".join(tips) + "."
    saved = sorted(out_dir.glob(checkpoint.PATTERN)) if out_dir else []
    if saved:
        text += (f" The last good checkpoint is {saved[-1]} (--restart it with the changed case, naming each "
                 f"changed [scheme] key with --allow-change KEY).")
    return text
