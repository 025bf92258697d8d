"""Question-answering blocks: retrieval strategies over `tools.search` and the Solver."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

REWRITE_QUERY = ("Write one short search query (keywords only) for the fact needed to answer "
                 "this question.\n\nQuestion: {question}\nQuery:")
FOLLOW_UP = ("Question: {question}\n\nPassages:\n{passages}\n\nWhat fact is still missing to "
             "answer the question? Write one short search query for it.\nQuery:")
CHECK_DRAFT = ("Question: {question}\nDraft answer: {draft}\n\nPassages:\n{passages}\n\n"
               "If the passages support the draft, repeat it. Otherwise give the answer they "
               "support. Reply with a short phrase on one line starting with 'Answer:'.")
PASSAGE_CHARS = 600


class Shown(NamedTuple):
    """A passage as a block keeps it in graph state: its title and text only."""

    title: str
    text: str


def show(passages: list[Any]) -> str:
    """Passages as the Solver reads them: title in brackets, then the text (cut)."""
    return "\n\n".join(f"[{p.title}] {p.text[:PASSAGE_CHARS]}" for p in passages)


def first_line(reply: str) -> str:
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    return lines[0].strip().strip('"') if lines else ""


def rewrite_query(tools: Any, question: str, *, max_tokens: int = 32) -> str:
    """A keyword query for the question, written by the Solver (the question if it writes none)."""
    reply = tools.llm(REWRITE_QUERY.format(question=question), max_tokens=max_tokens)
    return first_line(reply.split("Query:", 1)[-1]) or question


def merge_passages(*lists: list[Any], k: int) -> list[Any]:
    """Round-robin over the lists, each passage once (by title and text), at most `k`."""
    seen, merged = set(), []
    for row in zip(*[list(x) + [None] * (max(map(len, lists)) - len(x)) for x in lists],
                   strict=True):
        for p in row:
            if p is not None and (p.title, p.text) not in seen:
                seen.add((p.title, p.text))
                merged.append(p)
    return merged[:k]


def extra_hop(tools: Any, question: str, passages: list[Any], k: int, *,
              max_tokens: int = 32) -> list[Any]:
    """One more search, for the fact the first passages miss; both sets merged."""
    reply = tools.llm(FOLLOW_UP.format(question=question, passages=show(passages)),
                      max_tokens=max_tokens)
    query = first_line(reply.split("Query:", 1)[-1])
    if not query:
        return passages
    return merge_passages(passages, tools.search(query, k), k=2 * k)


def draft_and_check(tools: Any, question: str, draft: str, *, k: int = 5,
                    max_tokens: int = 48) -> str:
    """The paper's QA check: search again with the draft answer, and keep the draft only if
    the new passages support it."""
    passages = tools.search(f"{question} {draft}".strip(), k)
    reply = tools.llm(CHECK_DRAFT.format(question=question, draft=draft, passages=show(passages)),
                      max_tokens=max_tokens)
    text = reply.rsplit("Answer:", 1)[-1] if "Answer:" in reply else reply
    return first_line(text) or draft


ANSWER_FROM_PASSAGES = ("Answer the question from the passages with a short phrase only (a name, "
                        "date or number, or yes or no), on one line starting with 'Answer:'.\n\n"
                        "Question: {question}\n\nPassages:\n{passages}")
SHORT_ANSWER = ("Question: {question}\nAnswer: {answer}\n\nGive only the shortest span of the "
                "answer that answers the question (a name, date or number), or yes or no. "
                "Reply on one line.\nShort answer:")
PASSAGE_TOKENS = 1024
"""Default token budget of all passages in the answer prompt: with the instruction and the
question, about 1,100 prompt tokens, which a 1.5B Solver on a CPU reads in seconds and which
leaves a small model's context (SmolLM2: 8,192) plenty of room."""
CHARS_PER_TOKEN = 4
"""No tokenizer runs in the sandbox: English text averages about four characters a token."""
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)
_LABEL = re.compile(r"^(?:short answer|final answer|answer)\s*[:\-]\s*", re.IGNORECASE)
_YES_NO = re.compile(r"^(yes|no)\s*(?:$|[,.;:!\-])", re.IGNORECASE)
_EDGE = "\"'`*_()[]{}<> \t"
_AUXILIARY = re.compile(r"^(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|"
                        r"should|shall|may|might|must)\b", re.IGNORECASE)
_CHOICE = re.compile(r"\bor\b", re.IGNORECASE)


def cut(text: str, tokens: int) -> str:
    """`text` cut to about `tokens` tokens, at a word boundary (with an ellipsis when cut)."""
    limit = max(1, tokens) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    head = text[:limit]
    return (head.rsplit(" ", 1)[0] if " " in head else head) + " ..."


def bounded(passages: list[Any], tokens: int = PASSAGE_TOKENS) -> str:
    """The passages as the answer reads them: each once (by title and text), each cut to an
    equal share of the `tokens` budget, so every hop's evidence is shown however many hops."""
    unique = merge_passages(passages, k=len(passages))
    if not unique:
        return "(no passages)"
    share = max(1, tokens // len(unique))
    return "\n\n".join(f"[{p.title}] {cut(p.text, share)}" for p in unique)


def answer_from_passages(tools: Any, question: str, passages: list[Any], *,
                         tokens: int = PASSAGE_TOKENS, max_tokens: int = 48) -> str:
    """The paper's most adopted QA change: the answer reads the retrieved passages of every
    hop (at most `tokens` of them), not the notes written about them, so a fact a summary
    dropped can still be the answer."""
    reply = tools.llm(ANSWER_FROM_PASSAGES.format(question=question,
                                                  passages=bounded(passages, tokens)),
                      max_tokens=max_tokens)
    text = reply.rsplit("Answer:", 1)[-1] if "Answer:" in reply else reply
    return first_line(text)


def normalise_short(text: str) -> str:
    """A short answer's canonical form, by rule, for any task: its first line without a label
    ('Answer:'), quotes, a leading article or trailing punctuation; a reply that is yes or no
    (alone or before a comma or a stop: 'Yes, he did.') is just 'yes' or 'no'."""
    line = first_line(text)
    line = _LABEL.sub("", line).strip(_EDGE)
    said = _YES_NO.match(line)
    if said:
        return said.group(1).lower()
    line = _ARTICLE.sub("", line).rstrip(".,;:!?" + _EDGE).strip(_EDGE)
    return line


def yes_no_question(question: str) -> bool:
    """Whether `question` asks for a yes or a no: it opens with an auxiliary verb ('Are both
    ...', 'Did ...') and offers no choice ('Was A or B born first?' asks for A or B). In the
    HotpotQA and 2Wiki samples this tells 45 of the 46 questions opening so: all 42 yes/no ones,
    the 3 choices; 'Did he ever work anywhere other than ...?' is the miss."""
    text = question.strip()
    return bool(_AUXILIARY.match(text)) and not _CHOICE.search(text)


def within(span: str, answer: str) -> bool:
    """Whether `span` is in `answer` as whole words (case aside)."""
    return bool(re.search(rf"(?<!\w){re.escape(span)}(?!\w)", answer, re.IGNORECASE))


def short_answer(tools: Any, question: str, answer: str, *, max_tokens: int = 24) -> str:
    """Span extraction: the Solver gives only the shortest span of `answer`, normalised. The
    span is kept only if it is one: words of `answer`, or a yes or no to a yes/no question.
    Otherwise the normalised `answer` stands: asked this, the 1.5B Solver replied 'Yes' to 4 of
    24 HotpotQA questions whose answers were names, all four right before (docs/BLOCKS.md)."""
    draft = normalise_short(answer)
    if not draft:
        return ""
    reply = tools.llm(SHORT_ANSWER.format(question=question, answer=answer),
                      max_tokens=max_tokens)
    span = normalise_short(reply)
    said = span in ("yes", "no") and yes_no_question(question)
    return span if span and (said or within(span, answer)) else draft
