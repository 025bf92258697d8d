"""Question-answering blocks: retrieval strategies over `tools.search` and the Solver."""

from __future__ import annotations

from typing import Any

REWRITE_QUERY = ("Write one short search query (keywords only) for the fact needed to answer "
                 "this question.\n\nQuestion: {question}\nQuery:")
FOLLOW_UP = ("Question: {question}\n\nPassages:\n{passages}\n\nWhat fact is still missing to "
             "answer the question? Write one short search query for it.\nQuery:")
CHECK_DRAFT = ("Question: {question}\nDraft answer: {draft}\n\nPassages:\n{passages}\n\n"
               "If the passages support the draft, repeat it. Otherwise give the answer they "
               "support. Reply with a short phrase on one line starting with 'Answer:'.")
PASSAGE_CHARS = 600


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
