"""``/metrics`` for Prometheus: what a run is doing, in Prometheus's text format.

  reading.py     one run's figures, read from its journal at each scrape
                 (and from the master where the scrape runs in it)
  exposition.py  the figures as metric families (prometheus_client), the text
  server.py      ``taskflow run --metrics-port``: /metrics alone, behind the
                 monitor's token rules

The monitor (monitor/server.py) and ``taskflow serve`` (serve/app.py) serve the
same text at their ``/metrics``. The metric names: docs/guide/record-outside.md.
"""
