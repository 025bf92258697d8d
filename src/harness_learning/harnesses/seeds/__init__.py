"""Seed and baseline harness sources, read as text (they run only inside sandbox workers)."""

from __future__ import annotations

from importlib import resources

SEEDS = {
    "reasoning_direct": "reasoning_direct.py",
    "reasoning_respond": "reasoning_respond.py",
    "multihop_two_hop": "multihop_two_hop.py",
    "baseline_tool_loop": "baseline_tool_loop.py",
}


def seed_source(name: str) -> str:
    """The source text of a named seed or baseline harness."""
    if name not in SEEDS:
        raise KeyError(f"unknown seed harness {name!r}; known: {', '.join(SEEDS)}")
    return resources.files(__package__).joinpath(SEEDS[name]).read_text(encoding="utf-8")
