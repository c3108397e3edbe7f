"""Benchmarks: the decoding benchmark, the `make bench` suite, launch advice. Results are values (JSON-ready)."""
