"""Dense retrieval with Chroma: an embedded PersistentClient by default, an HttpClient when a
server URL (`chroma run --path DIR --port P`) is given.

Passage ids are the store's ids, so ingestion is resumable: a re-run asks Chroma which ids of
each batch it already holds and embeds only the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlparse

from harness_learning.retrieval.embedding import (
    EF_NAME,
    MODEL_DIM,
    MODEL_NAME,
    make_embedding_function,
)
from harness_learning.retrieval.passage import Passage
from harness_learning.retrieval.store import PassageStore

SUBDIR = "chroma"
COLLECTION = "passages"


class IndexMismatchError(ValueError):
    """An index and the settings used to open or extend it disagree (e.g. embedding model)."""


def _client(directory: Path, url: str | None):
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=False)
    if url:
        u = urlparse(url if "://" in url else f"http://{url}")
        return chromadb.HttpClient(host=u.hostname or "localhost", port=u.port or 8000,
                                   ssl=u.scheme == "https", settings=settings)
    return chromadb.PersistentClient(path=str(directory / SUBDIR), settings=settings)


def collection_metadata() -> dict:
    return {"hnsw:space": "cosine", "embedding_model": MODEL_NAME, "embedding_dim": MODEL_DIM,
            "embedding_function": EF_NAME}


def check_model(meta: dict | None, where: str) -> None:
    """Raise if a collection was embedded with another model than the one we query with."""
    meta = meta or {}
    model, dim = meta.get("embedding_model"), meta.get("embedding_dim")
    if model != MODEL_NAME or dim != MODEL_DIM:
        raise IndexMismatchError(
            f"{where}: embedded with {model!r} (dim {dim}), but this build embeds with "
            f"{MODEL_NAME!r} (dim {MODEL_DIM}); rebuild the Chroma index into a new directory")


def ingest(directory: Path, store: PassageStore, *, text_of: Callable[[str, str], str],
           limit: int | None = None, batch_size: int = 256, device: str = "cpu",
           url: str | None = None, collection: str = COLLECTION, progress: bool = True) -> int:
    """Embed and add passages [0, limit) not yet stored; returns how many the collection holds."""
    from tqdm.auto import tqdm

    ef = make_embedding_function(device)
    col = _client(directory, url).get_or_create_collection(
        collection, embedding_function=ef, metadata=collection_metadata())
    check_model(col.metadata, f"{url or directory / SUBDIR} collection {collection!r}")
    n = len(store) if limit is None else min(limit, len(store))
    bar = tqdm(total=n, desc="chroma embed", unit="psg", disable=not progress)
    for start in range(0, n, batch_size):
        ids = [str(i) for i in range(start, min(start + batch_size, n))]
        have = set(col.get(ids=ids, include=[])["ids"])
        todo = [i for i in ids if i not in have]
        if todo:
            rows = [store.get(int(i)) for i in todo]
            docs = [text_of(t, x) for t, x in rows]
            col.add(ids=todo, embeddings=ef(docs), documents=[x for _, x in rows],
                    metadatas=[{"title": t} for t, _ in rows])
        bar.update(len(ids))
    bar.close()
    return col.count()


class ChromaIndex:
    """A Retriever over a Chroma collection; search embeds the query with the same model."""

    def __init__(self, directory: str | Path, *, url: str | None = None, device: str = "cpu",
                 collection: str = COLLECTION) -> None:
        self.dir = Path(directory)
        self._ef = make_embedding_function(device)
        client = _client(self.dir, url)
        try:
            self._col = client.get_collection(collection, embedding_function=self._ef)
        except Exception as e:  # chromadb raises its own NotFoundError / ValueError kinds
            raise FileNotFoundError(f"{url or self.dir / SUBDIR}: no Chroma collection {collection!r} ({e})") from e
        check_model(self._col.metadata, f"{url or self.dir / SUBDIR} collection {collection!r}")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._col.count()

    def search(self, query: str, k: int = 5) -> list[Passage]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[Passage]]:
        if not queries or k <= 0:
            return [[] for _ in queries]
        emb = self._ef(list(queries))
        res = self._col.query(query_embeddings=emb, n_results=k,
                              include=["documents", "metadatas", "distances"])
        out = []
        for ids, docs, metas, dists in zip(res["ids"], res["documents"], res["metadatas"],
                                           res["distances"], strict=True):
            out.append([Passage(str((m or {}).get("title", "")), d or "", 1.0 - float(dist), i)
                        for i, d, m, dist in zip(ids, docs, metas, dists, strict=True)])
        return out
