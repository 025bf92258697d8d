"""Loaders for the official multi-hop QA files: HotpotQA, MuSiQue, 2WikiMultihopQA.

Each accepts the full official files and the small samples alike (JSON list or JSONL, detected;
records are read one at a time) and yields `QARecord`s. A record that cannot be scored (no
answer, a context of the wrong shape, an answer entity missing from a given alias file) stops
loading with a `RecordError` naming the file, the record's index and its id: a silently dropped
question would change every reported score.

Layouts:
- HotpotQA original: `_id`, `context` [[title, [sentences]]], `supporting_facts` [[title, i]];
  Hugging Face `hotpot_qa`: `id`, `context{title[], sentences[[]]}`,
  `supporting_facts{title[], sent_id[]}`. Both are accepted, record by record.
- MuSiQue (`musique_ans_v1.0_*.jsonl`, or `musique_full`): `id`, `paragraphs[{idx, title,
  paragraph_text, is_supporting}]`, `answer`, `answer_aliases`, `answerable`.
- 2Wiki: `_id`, `type`, `context`, `supporting_facts`, `evidences`, `answer`, `answer_id`;
  other keys are ignored. With the official `id_aliases.json` (JSON lines `{"Q_id", "aliases",
  "demonyms"}`) the aliases and demonyms of `answer_id` join the gold answers, as in the
  official script; a record whose `answer_id` is absent from that file is an error (a wrong or
  partial alias file would otherwise silently lower scores). `answer_id` null (dates, yes/no)
  means no aliases.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness_learning.evals.qa.reader import RecordError, iter_json_records

DATASETS = ("hotpotqa", "musique", "2wiki")


@dataclass(frozen=True)
class QARecord:
    """One question. `answers[0]` is the dataset's answer; the rest are its aliases."""

    id: str
    question: str
    answers: tuple[str, ...]
    supporting_titles: tuple[str, ...]
    dataset: str
    type: str = ""
    answerable: bool = True


class _Bad(Exception):
    """Raised inside a parser; turned into a RecordError with the file and index."""


def _str(record: dict, key: str, *, required: bool = True) -> str:
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        what = "missing" if value is None else f"not a non-empty string ({type(value).__name__})"
        raise _Bad(f"{key!r} is {what}")
    return value


def _unique(items) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _titles_from_context(context) -> list[str]:
    """Validate a context in either layout and return its titles."""
    if isinstance(context, dict):
        titles, sentences = context.get("title"), context.get("sentences")
        if not isinstance(titles, list) or not isinstance(sentences, list):
            raise _Bad("'context' dict needs lists 'title' and 'sentences'")
        if len(titles) != len(sentences):
            raise _Bad(f"'context' has {len(titles)} titles but {len(sentences)} sentence lists")
        pairs = zip(titles, sentences, strict=True)
    elif isinstance(context, list):
        if not all(isinstance(p, list) and len(p) == 2 for p in context):
            raise _Bad("'context' must be a list of [title, [sentences]] pairs")
        pairs = context
    else:
        raise _Bad(f"'context' must be a list or a dict, not {type(context).__name__}")
    out = []
    for title, sents in pairs:
        if not isinstance(title, str) or not isinstance(sents, list):
            raise _Bad("'context' entries must be (title: str, sentences: list)")
        if not all(isinstance(s, str) for s in sents):
            raise _Bad(f"'context' paragraph {title!r} has a sentence that is not a string")
        out.append(title)
    return out


def _titles_from_facts(facts) -> list[str]:
    if isinstance(facts, dict):
        titles = facts.get("title")
        if not isinstance(titles, list) or not isinstance(facts.get("sent_id"), list):
            raise _Bad("'supporting_facts' dict needs lists 'title' and 'sent_id'")
    elif isinstance(facts, list):
        if not all(isinstance(f, list) and len(f) == 2 for f in facts):
            raise _Bad("'supporting_facts' must be a list of [title, sent_id] pairs")
        titles = [f[0] for f in facts]
    else:
        raise _Bad("'supporting_facts' is missing or not a list/dict")
    if not all(isinstance(t, str) for t in titles):
        raise _Bad("'supporting_facts' has a title that is not a string")
    return titles


def _hotpot_like(record: dict, dataset: str, extra: tuple[str, ...] = ()) -> QARecord:
    rid = record.get("_id", record.get("id"))
    if not isinstance(rid, str) or not rid:
        raise _Bad("no '_id' or 'id'")
    _titles_from_context(record.get("context"))
    titles = _titles_from_facts(record.get("supporting_facts"))
    answer = _str(record, "answer")
    return QARecord(
        id=rid,
        question=_str(record, "question"),
        answers=_unique((answer, *extra)),
        supporting_titles=_unique(titles),
        dataset=dataset,
        type=_str(record, "type", required=False),
    )


def _musique(record: dict) -> QARecord:
    paragraphs = record.get("paragraphs")
    if not isinstance(paragraphs, list):
        raise _Bad("'paragraphs' is missing or not a list")
    supporting = []
    for i, p in enumerate(paragraphs):
        if not isinstance(p, dict) or not isinstance(p.get("title"), str) or not isinstance(
            p.get("paragraph_text"), str
        ):
            raise _Bad(f"paragraph {i} needs string 'title' and 'paragraph_text'")
        if p.get("is_supporting"):
            supporting.append(p["title"])
    aliases = record.get("answer_aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise _Bad("'answer_aliases' must be a list of strings")
    rid = _str(record, "id")
    answerable = record.get("answerable", True)
    return QARecord(
        id=rid,
        question=_str(record, "question"),
        answers=_unique((_str(record, "answer"), *aliases)),
        supporting_titles=_unique(supporting),
        dataset="musique",
        type=rid.split("__", 1)[0] if "__" in rid else "",
        answerable=bool(answerable),
    )


def _records(path: Path | str, parse) -> Iterator[QARecord]:
    for index, record in iter_json_records(path):
        try:
            yield parse(record)
        except _Bad as exc:
            rid = record.get("_id", record.get("id"))
            raise RecordError(path, index, rid, str(exc)) from None


def iter_hotpotqa(path: Path | str) -> Iterator[QARecord]:
    """HotpotQA records, original or Hugging Face layout."""
    return _records(path, lambda r: _hotpot_like(r, "hotpotqa"))


def iter_musique(path: Path | str) -> Iterator[QARecord]:
    """MuSiQue records (answer + answer_aliases)."""
    return _records(path, _musique)


def load_2wiki_aliases(path: Path | str) -> dict[str, tuple[str, ...]]:
    """`id_aliases.json`: Wikidata id -> aliases + demonyms (JSON lines, as shipped)."""
    table: dict[str, tuple[str, ...]] = {}
    for index, record in iter_json_records(path):
        qid, aliases, demonyms = (record.get(k) for k in ("Q_id", "aliases", "demonyms"))
        lists = (aliases or [], demonyms or [])
        if not isinstance(qid, str) or not all(
            isinstance(x, list) and all(isinstance(s, str) for s in x) for x in lists
        ):
            raise RecordError(path, index, qid, "needs 'Q_id' (string), 'aliases' and "
                              "'demonyms' (lists of strings)")
        table[qid] = _unique((*lists[0], *lists[1]))
    return table


def iter_2wiki(
    path: Path | str, aliases: dict[str, tuple[str, ...]] | Path | str | None = None
) -> Iterator[QARecord]:
    """2WikiMultihopQA records; `aliases` is `id_aliases.json` (a path or its loaded table)."""
    table = load_2wiki_aliases(aliases) if isinstance(aliases, (str, Path)) else aliases

    def parse(record: dict) -> QARecord:
        answer_id = record.get("answer_id")
        extra: tuple[str, ...] = ()
        if table is not None and answer_id is not None:
            if answer_id not in table:
                raise _Bad(f"answer_id {answer_id!r} is not in the alias file")
            extra = table[answer_id]
        return _hotpot_like(record, "2wiki", extra)

    return _records(path, parse)


def load_records(dataset: str, path: Path | str, **options) -> list[QARecord]:
    """All records of `dataset` ("hotpotqa", "musique" or "2wiki") from `path`."""
    readers = {"hotpotqa": iter_hotpotqa, "musique": iter_musique, "2wiki": iter_2wiki}
    if dataset not in readers:
        raise ValueError(f"unknown QA dataset {dataset!r}; known: {', '.join(DATASETS)}")
    records = list(readers[dataset](path, **options))
    seen: dict[str, int] = {}
    for index, rec in enumerate(records):
        if rec.id in seen:
            raise RecordError(path, index, rec.id, f"duplicate id (first at record {seen[rec.id]})")
        seen[rec.id] = index
    return records
