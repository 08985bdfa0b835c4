"""Pictures and reports of a run, made from its journal (:mod:`taskflow.journal`)."""
