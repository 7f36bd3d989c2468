"""Small adaptive cases shared by the one-rank and the many-rank AMR tests."""

# A dense blob carried across a periodic 2D box: the forest follows it, regridding every 2 steps.
BLOB = """
[case]
name = "blob_amr"
[model]
name = "euler"
[grid]
cells = [32, 32]
upper = [1.0, 1.0]
[amr]
block_cells = 8
max_level = 2
regrid_every = 2
[scheme]
reconstruction = "weno5"
riemann = "hllc"
[time]
end = 0.03
[boundary]
x = "periodic"
y = "periodic"
[initial]
background = { rho = 1.0, vel = [4.0, 2.0, 0.0], p = 1.0 }
[[initial.regions]]
shape = "sphere"
center = [0.3, 0.3]
radius = 0.15
state = { rho = 4.0, p = 2.0 }
[output]
interval = 0.01
checkpoint_interval = 0.015
"""
