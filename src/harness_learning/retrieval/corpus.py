"""Corpus loaders: every kind streams `{"title", "text"}` dicts, one passage at a time.

Kinds:
- `hotpotqa-wiki`: HotpotQA's Wikipedia abstracts in the official layout, i.e. a directory of
  bz2 shards of JSON lines (`title`, `text` as a list of sentences, `url`), one shard, or the
  `.tar.bz2` archive as downloaded.
- `musique` / `2wiki`: the closed corpus of a dataset file (all questions' paragraphs,
  de-duplicated on (title, text), never on title alone). A `{title, text}` list is also accepted.
- `jsonl`: a JSON list or JSON-lines file of `{title, text}` records.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from harness_learning.retrieval.jsonstream import CorpusError, iter_json_lines, iter_json_records

CORPUS_KINDS = ("hotpotqa-wiki", "musique", "2wiki", "jsonl")


def _sentences(value: object) -> str:
    """Join a sentence list the way the public closed corpora do (one space between)."""
    if isinstance(value, str):
        return value.strip()
    return " ".join(s.strip() for s in value if isinstance(s, str) and s.strip())


PASSAGE_SHAPE = 'each passage is {"title": "...", "text": "..."} (text may be a list of sentences)'


def _require(rec: object, keys: Iterable[str], where: str, shape: str = PASSAGE_SHAPE) -> dict:
    """`rec` as a dict holding `keys`; else one line naming the place, the key and the shape."""
    if not isinstance(rec, dict):
        raise CorpusError(f"{where}: expected a JSON object, got {type(rec).__name__}; {shape}")
    for key in keys:
        if key not in rec:
            raise CorpusError(f"{where}: record lacks {key!r}; {shape}")
    return rec


def _plain(rec: object, where: str, *, blank_ok: bool = True) -> dict:
    """A `{title, text}` record; `blank_ok=False` (a user's own corpus) refuses an empty text,
    which would index a passage no query can find by its content."""
    rec = _require(rec, ("title", "text"), where)
    title, text = rec["title"], rec["text"]
    if not isinstance(title, str):
        raise CorpusError(f"{where}: 'title' must be a string; {PASSAGE_SHAPE}")
    if not isinstance(text, str | list):
        got = "null" if text is None else type(text).__name__
        raise CorpusError(f"{where}: 'text' must be a string or a list of sentences, got {got}; "
                          f"{PASSAGE_SHAPE}")
    passage = {"title": title.strip(), "text": _sentences(text)}
    if not blank_ok and not passage["text"]:
        raise CorpusError(f"{where}: record {passage['title']!r} has an empty 'text'; give its "
                          "passage text or drop the record")
    return passage


MUSIQUE_SHAPE = ('a MuSiQue record holds "paragraphs": [{"title", "paragraph_text"}, ...], or '
                 'is a {"title", "text"} passage')


def _musique(rec: object, where: str) -> Iterator[dict]:
    if isinstance(rec, dict) and "paragraphs" not in rec and "title" in rec:
        yield _plain(rec, where)
        return
    rec = _require(rec, ("paragraphs",), where, MUSIQUE_SHAPE)
    for i, p in enumerate(rec["paragraphs"]):
        p = _require(p, ("title", "paragraph_text"), f"{where}: paragraph {i}", MUSIQUE_SHAPE)
        yield {"title": str(p["title"]).strip(), "text": str(p["paragraph_text"]).strip()}


def _twowiki(rec: object, where: str) -> Iterator[dict]:
    if isinstance(rec, dict) and "context" not in rec and "title" in rec:
        yield _plain(rec, where)
        return
    rec = _require(rec, ("context",), where, 'a 2Wiki record holds "context": [[title, '
                   '[sentences]], ...], or is a {"title", "text"} passage')
    ctx = rec["context"]
    if isinstance(ctx, dict):  # the Hugging Face layout: {title: [...], sentences: [[...]]}
        ctx = list(zip(ctx.get("title", []), ctx.get("sentences", []), strict=False))
    for i, item in enumerate(ctx):
        if not (isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise CorpusError(f"{where}: context item {i} is not [title, [sentences]]")
        yield {"title": item[0].strip(), "text": _sentences(item[1])}


def _dedup(records: Iterator[dict]) -> Iterator[dict]:
    """Drop exact (title, text) repeats; a 16-byte digest per passage keeps memory small."""
    seen: set[bytes] = set()
    for r in records:
        key = hashlib.blake2b(f"{r['title']}\x00{r['text']}".encode(), digest_size=16).digest()
        if key not in seen:
            seen.add(key)
            yield r


def _from_records(path: Path, per_record: Callable[[object, str], Iterator[dict]]) -> Iterator[dict]:
    for line, rec in iter_json_records(path):
        yield from per_record(rec, f"{path}:{line}")


def _wiki_lines(lines: Iterable[bytes], where: str) -> Iterator[dict]:
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise CorpusError(f"{where}:{n}: not UTF-8 ({e.reason})") from e
        except json.JSONDecodeError as e:
            raise CorpusError(f"{where}:{n}: malformed JSON line ({e.msg})") from e
        p = _plain(rec, f"{where}:{n}")
        if p["text"]:
            yield p


def _wiki_file(path: Path) -> Iterator[dict]:
    if path.suffix == ".bz2":
        try:
            with bz2.open(path, "rb") as f:
                yield from _wiki_lines(f, str(path))
        except OSError as e:
            raise CorpusError(f"{path}: not a bz2 shard ({e})") from e
    else:
        for n, rec in iter_json_lines(path):
            p = _plain(rec, f"{path}:{n}")
            if p["text"]:
                yield p


def _wiki_tar(path: Path) -> Iterator[dict]:
    with tarfile.open(path, mode="r|*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            f = tar.extractfile(member)
            if f is None:
                continue
            data = f.read()
            where = f"{path}!{member.name}"
            if member.name.endswith(".bz2"):
                data = bz2.decompress(data)
            yield from _wiki_lines(io.BytesIO(data), where)


def iter_hotpotqa_wiki(path: str | Path) -> Iterator[dict]:
    """Stream the abstracts: a shard directory (sorted, recursive), one shard, or the tarball."""
    path = Path(path)
    if path.is_dir():
        shards = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not shards:
            raise CorpusError(f"{path}: no shard files in this directory")
        for shard in shards:
            yield from _wiki_file(shard)
    elif not path.is_file():
        raise CorpusError(f"{path}: no such file or directory")
    elif path.name.endswith((".tar.bz2", ".tar", ".tgz", ".tar.gz")):
        yield from _wiki_tar(path)
    else:
        yield from _wiki_file(path)


def iter_corpus(kind: str, path: str | Path) -> Iterator[dict]:
    """Stream `{"title", "text"}` passages of a corpus of the given kind."""
    path = Path(path)
    if kind == "hotpotqa-wiki":
        return iter_hotpotqa_wiki(path)
    if kind == "musique":
        return _dedup(_from_records(path, _musique))
    if kind == "2wiki":
        return _dedup(_from_records(path, _twowiki))
    if kind == "jsonl":
        return _from_records(path, lambda rec, where: iter([_plain(rec, where, blank_ok=False)]))
    raise ValueError(f"unknown corpus kind {kind!r}; choose from {', '.join(CORPUS_KINDS)}")
