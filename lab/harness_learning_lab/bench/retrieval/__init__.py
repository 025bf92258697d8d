"""Benchmarks that print figures (never timed tests): BM25 at scale and recall on real samples."""
