"""A run's task attempts as a table: Nextflow's trace fields and taskflow's own.

:mod:`.fields` says what each column is and writes rows as TSV, CSV or JSON;
:mod:`.rows` makes the rows of a run from its journal (``taskflow trace RUN
--format tsv``); :mod:`.live` writes them while the run goes (``taskflow run
--trace-file F``), from the run's events, one row per ended attempt.
"""
