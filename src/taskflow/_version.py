"""The version of taskflow; master and nodes must run the same one (frames change)."""
__version__ = "0.1.0"
# The name to pip install. ``taskflow`` on the package index is OpenStack's TaskFlow (another
# library, with the same import name): this project is published as taskflow-hpc.
DIST_NAME = "taskflow-hpc"
