"""Helpers for tests and benchmarks (not used by the product itself)."""
