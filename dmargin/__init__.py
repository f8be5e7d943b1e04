"""dmargin: margin-based feature selection, from a laptop to a Dask cluster."""

from ._immigrate import IM4E, BoostedImmigrate, IM4EImmigrate, Immigrate
from ._parquet import read_parquet
from ._relief import IRelief, OnlineIRelief, Relief, ReliefF

__all__ = [
    "BoostedImmigrate",
    "IM4E", "IM4EImmigrate", "IRelief", "Immigrate", "OnlineIRelief", "Relief", "ReliefF",
    "read_parquet"]
__version__ = "0.1.0"
