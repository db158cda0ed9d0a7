"""solbench: benchmark GPU kernels against the hardware's speed of light."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("solbench")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
