"""The one record every retriever returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Passage:
    """A retrieved passage. `id` is stable within its index; `score` is the backend's own."""

    title: str
    text: str
    score: float = 0.0
    id: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Passage:
        return cls(str(d["title"]), str(d["text"]), float(d.get("score", 0.0)), str(d.get("id", "")))
