"""The version of taskflow; master and nodes must run the same one (frames change)."""
__version__ = "0.1.0"
