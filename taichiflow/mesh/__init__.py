"""Block-structured adaptive mesh refinement without Taichi: the forest of blocks (Morton order,
neighbours, 2:1 balanced regrids) and the device pool's slots and tables built from it."""
from .block import Block
from .forest import Forest
from .morton import morton_key
from .neighbourhood import Neighbour
from .regions import Region, RegionLevels
from .slots import DeviceTables, PoolFull, RegridPlan, assign_slots, device_tables, plan_regrid, updated_tables

__all__ = ["Block", "Forest", "Neighbour", "Region", "RegionLevels", "PoolFull", "RegridPlan", "DeviceTables", "assign_slots", "plan_regrid",
           "device_tables", "updated_tables", "morton_key"]
