"""How each edit format is explained to the Proposer, next to the parsers that read it."""

from __future__ import annotations

from harness_learning.harnesses.edits.edit import check_format
from harness_learning.harnesses.edits.function_edit import IMPORTS_PLACEHOLDER

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

Example (the shape only; copy your SEARCH lines from the current program):
<<<<<<< SEARCH
<one or more lines exactly as they stand in the current program>
=======
<what they become>
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


_FUNCTION = f"""\
Answer with the new version of that one function in exactly one fenced block:

```python
{IMPORTS_PLACEHOLDER}
def <the same name>(<the same arguments>):
    <its new body>
```

It replaces the old one where it stands (inside `build_graph` if it was there, with the same
names in reach) and returns what the old one returned: a dict of the same state keys. It must
work differently: a copy of the old function is refused. Text outside the block is ignored."""

_INSTRUCTIONS = {"search_replace": _SEARCH_REPLACE, "whole_program": _WHOLE_PROGRAM,
                 "function": _FUNCTION}


def format_instructions(fmt: str) -> str:
    """The rules (and the shape) of one edit format, as shown in the Proposer prompt. No
    example is an edit of a real seed: small Proposers copy an example verbatim."""
    return _INSTRUCTIONS[check_format(fmt)]
