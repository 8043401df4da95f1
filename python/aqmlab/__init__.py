"""aqmlab: packet-level AQM and congestion-control experiments."""
from aqmlab import _engine

__version__ = _engine.__version__
