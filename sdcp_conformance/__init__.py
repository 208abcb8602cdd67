"""sdcp-conformance: conformance harness, reference stack and fuzzer for SDCP."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sdcp-conformance")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
