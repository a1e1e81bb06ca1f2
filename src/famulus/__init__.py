"""famulus: a self-hosted personal AI agent server."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("famulus")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"
