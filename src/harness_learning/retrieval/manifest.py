"""`manifest.json`: what an index directory holds, so it can be opened without guessing."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

NAME = "manifest.json"
FORMAT = 1


@dataclass
class Manifest:
    corpus: dict  # {"kind", "input", "fingerprint"}
    passages: int
    tokenizer: dict
    backends: list[str] = field(default_factory=list)
    bm25: dict | None = None
    embedding: dict | None = None  # {"model", "dim", "device"}
    chroma: dict | None = None  # {"collection", "url", "count", "limit"}
    build_s: float = 0.0
    format: int = FORMAT

    def save(self, directory: str | Path) -> None:
        """Atomic: a reader never sees a half-written manifest."""
        path = Path(directory) / NAME
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, directory: str | Path) -> Manifest:
        path = Path(directory) / NAME
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: not an index directory (no {NAME})")
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: unreadable manifest ({e})") from e
        if d.get("format") != FORMAT:
            raise ValueError(f"{path}: index format {d.get('format')!r}, expected {FORMAT}")
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})
