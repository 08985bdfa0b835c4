"""Command farms: one program over many inputs, no Python file (``taskflow map``).

A map is a run like any other: each item is one call of a program task
(:mod:`.task` makes its ``@binary`` declaration from the command line), so
the journal, ``status``, ``logs``, reports, the monitor and ``--resume`` see
it as they see a script's tasks. What is the map's own: where the items come
from (:mod:`.sources`: ranges, lines of a file, a JSON list, their cross
product, all read lazily), how an item fills the command line and the file
names (:mod:`.placeholders`, GNU Parallel's ``{}`` ``{#}`` ``{.}`` ``{name}``),
the checks made before any item starts (:mod:`.items`), and the loop that
keeps a bounded number of items in flight and counts failures (:mod:`.runner`).
"""
