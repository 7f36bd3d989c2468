"""Adaptive mesh refinement on the device: the block pool, its ghost layers, fluxes, regrid."""
