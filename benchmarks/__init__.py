"""Benchmark harness for taskflow against its peers (see benchmarks/README.md)."""
