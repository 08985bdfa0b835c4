"""``pycompss.api``: decorators (one module each), parameters and the synchronisation API."""
