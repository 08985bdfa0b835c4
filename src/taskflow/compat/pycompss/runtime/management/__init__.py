"""``pycompss.runtime.management``."""
