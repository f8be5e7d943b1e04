"""dmargin: margin-based feature selection, from a laptop to a Dask cluster."""

from ._relief import IRelief, OnlineIRelief, Relief, ReliefF

__all__ = ["IRelief", "OnlineIRelief", "Relief", "ReliefF"]
__version__ = "0.1.0"
