"""pycompss.dds: the Distributed Data Set over the PyCOMPSs API."""
from pycompss.dds import DDS
print("RESULT", {
  "collect": DDS(range(10), 3).map(lambda x: x * 2).filter(lambda x: x % 3).collect(),
  "sum": DDS(range(10), 4).sum(), "count": DDS(range(10), 4).count(),
  "reduce": DDS(range(10), 5).reduce(lambda a, b: a + b, 100),
  "rbk": sorted(DDS([("a", 1), ("b", 2), ("a", 3)], 2)
                .reduce_by_key(lambda a, b: a + b).collect()),
  "cbv": DDS([1, 1, 2], 2).count_by_value(as_dict=True),
  "distinct": sorted(DDS([1, 1, 2, 3, 3], 2).distinct().collect()),
  "max": DDS(range(7), 3).max(),
  "flat": DDS([2, 3], 2).map_and_flatten(lambda x: range(x)).collect(),
  "gbk": sorted((k, sorted(v))
                for k, v in DDS([("a", 1), ("a", 2), ("b", 3)], 3).group_by_key().collect()),
  "sort": DDS([(3, "c"), (1, "a"), (2, "b")], 2).sort_by_key().keys().collect(),
  "parts": DDS(range(6), 2).collect(True)})
