"""twinsched: train, evaluate and deploy schedulers for the device-edge-cloud-HPC continuum."""

from twinsched.errors import DataNotFoundError, TraceFormatError, TwinschedError, UnknownNameError

__version__ = "0.1.0"

__all__ = [
    "DataNotFoundError",
    "TraceFormatError",
    "TwinschedError",
    "UnknownNameError",
    "__version__",
]
