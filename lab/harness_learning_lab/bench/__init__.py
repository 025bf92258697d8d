"""Benchmarks of the adaptation round: racing by simulation, a full round against the simulated endpoint."""
