"""``pycompss.functions``: elapsed_time, reduce, data, map."""
