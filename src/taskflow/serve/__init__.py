"""``taskflow serve``: a REST service that runs workflows for other programs (the DTES model).

One long-running process (FastAPI on uvicorn, the ``serve`` extra) keeps a
queue of runs and starts each as an ordinary ``taskflow run`` subprocess with
its own journal, so ``taskflow status/logs`` and the monitor work on it too.

  store.py    the service's own record of its runs (SQLite, survives restarts)
  runs.py     the queue and the run processes: start, watch, cancel, recover
  streams.py  server-sent event streams over the journals (events, followed logs)
  app.py      the JSON API under /api/v1, its token check and body limit
  metrics.py  GET /metrics: the running runs' figures for Prometheus
  service.py  binding, the token file, uvicorn, start and stop
"""
