"""Runs on many ranks (MPI): the split of the grid into blocks and the ranks of a run."""
