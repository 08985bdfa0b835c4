"""``python -m taskflow.cli``: the command line."""
from . import main

main()
