"""How each edit format is explained to the Proposer, next to the parsers that read it."""

from __future__ import annotations

from harness_learning.harnesses.edits.edit import check_format

_SEARCH_REPLACE = """\
Answer with one or more SEARCH/REPLACE blocks that change the current program:

<<<<<<< SEARCH
lines copied exactly from the current program
=======
the lines that replace them
>>>>>>> REPLACE

Rules:
- SEARCH must match a contiguous run of lines of the current program exactly once; include
  enough surrounding lines to make it unique. Copy indentation faithfully.
- Blocks apply in order, each to the result of the ones before it.
- To delete lines, leave the part after ======= empty. To add lines, SEARCH for a nearby line
  and repeat it in the replacement together with the new lines.
- Text outside the blocks is ignored; keep explanations short.

Example (changes one line):
<<<<<<< SEARCH
        return {"answer": answer}
=======
        return {"answer": answer.strip().rstrip(".")}
>>>>>>> REPLACE"""

_WHOLE_PROGRAM = """\
Answer with the complete new program in exactly one fenced block:

```python
<the whole program, from its imports to build_graph>
```

Rules:
- Write the whole file, not a fragment or a diff: it replaces the current program entirely.
- Use exactly one ```python block; text outside it is ignored.

Example (shape only):
```python
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    answer: str


def build_graph(tools):
    def solve(state: State) -> dict:
        return {"answer": tools.llm(state["question"]).strip()}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
```"""


def format_instructions(fmt: str) -> str:
    """The rules and a tiny example of one edit format, as shown in the Proposer prompt."""
    return _SEARCH_REPLACE if check_format(fmt) == "search_replace" else _WHOLE_PROGRAM
