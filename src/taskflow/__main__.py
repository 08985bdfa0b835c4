"""``python -m taskflow ...`` is the ``taskflow`` command."""
from .cli import main

main()
