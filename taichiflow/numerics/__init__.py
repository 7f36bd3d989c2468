"""Numerical building blocks: reconstructions, Riemann solvers, integrators.

Nothing here names a model: the numerics see a model only through `BoundModel` (taichiflow/bound_model.py).
"""
