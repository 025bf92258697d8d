"""Making entries safe to share: no question or gold answer of any split, no demonstrations, no
secret.

Free text (a task's description, a report's causes and metric feedback, a summary) has every
occurrence of a held text replaced by `MARK`, a character no question or answer is made of, so
a replacement can never spell a held text again. Code is not rewritten, since a change with a
piece cut out is no longer the change: an edit whose blocks or diff still hold a held text, or a
`DEMONSTRATIONS` list, keeps its outcomes but not its code (`withheld`), and is never applied.
The match is a plain substring one, as the redaction test's is: a one-character answer such as
"7" withholds every change holding a 7, the price of a rule that cannot miss.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace

from harness_learning.harnesses.experience.entry import Entry, Outcome, Signature

MARK = "\u2592"
DEMONSTRATIONS = "DEMONSTRATIONS"
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
SECRET_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
                           r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})")
MIN_SECRET_ENV = 8
"""An environment value shorter than this is no credential (`1`, `true`, a port)."""


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """The values of environment variables named like credentials (`*_API_KEY`, `*TOKEN*`,
    ...), long enough to be one."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if SECRET_ENV.search(k) and len(v.strip()) >= MIN_SECRET_ENV]


class Redactor:
    """Removes `held` texts (questions, gold answers, secrets) from what an entry stores."""

    def __init__(self, held: Iterable[str]) -> None:
        texts = {t for t in (str(h) for h in held) if t.strip() and MARK not in t}
        self.held = sorted(texts, key=lambda t: (-len(t), t))

    def leaks(self, text: str) -> bool:
        return (any(h in text for h in self.held) or DEMONSTRATIONS in text
                or SECRET_SHAPES.search(text) is not None)

    def text(self, text: str) -> str:
        """`text` with every held text, demonstrations list name and credential shape cut."""
        for h in self.held:
            if h in text:
                text = text.replace(h, MARK)
        text = text.replace(DEMONSTRATIONS, MARK)
        return SECRET_SHAPES.sub(MARK, text)

    def outcome(self, o: Outcome) -> Outcome:
        sig = o.signature
        clean = Signature(tuple((self.text(k), n) for k, n in sig.error_kinds),
                          tuple(map(self.text, sig.causes)), tuple(map(self.text, sig.feedback)))
        return replace(o, description=self.text(o.description), signature=clean,
                       task=self.text(o.task))

    def entry(self, entry: Entry) -> Entry:
        """`entry` safe to share: its free text cleaned, its code withheld if it leaks."""
        code = [entry.diff, *(part for block in entry.blocks for part in block)]
        blocks, diff = entry.blocks, entry.diff
        if any(self.leaks(c) for c in code):
            blocks, diff = (), ""
        return replace(entry, blocks=blocks, diff=diff, summary=self.text(entry.summary),
                       outcomes=tuple(self.outcome(o) for o in entry.outcomes))


def withheld(entry: Entry) -> bool:
    """An edit whose code redaction took out."""
    return entry.kind != "operator" and not entry.blocks
