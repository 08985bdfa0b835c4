"""Debugging a workflow where it is written: inline runs (:mod:`.inline`, on the node the
calling thread serves, :mod:`.node`), ``taskflow rerun`` of one task (:mod:`.rerun`,
:mod:`.rerun_node`) and ``taskflow run --plan`` (:mod:`.planning`). docs/guide/debugging.md."""
