"""`harness-learn export --standalone`: a version as a LangGraph file that stands alone. The blocks
it imports are inlined, so it imports only LangGraph, langchain-core and the standard library;
it runs where this package cannot be imported, over the user's own chat model class (here
SmolLM2 on its loopback server) and the user's code runner; a version that needs another part
of the package is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from harness_learning.cli.main import main
from harness_learning.harnesses.edits.operators import OPERATORS, OperatorError, apply_operator
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.standalone import (
    ALLOWED_ROOTS,
    StandaloneError,
    imported_roots,
    standalone_source,
)

DRIVER = textwrap.dedent('''
    import sys
    sys.modules["harness_learning"] = None  # the package cannot be imported from here on
    import importlib.util, json, subprocess, urllib.request
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    ROLES = {"human": "user", "ai": "assistant", "system": "system"}

    class MyChat(BaseChatModel):
        """A user's own chat model class: an OpenAI-compatible endpoint over urllib."""
        url: str
        calls: int = 0

        @property
        def _llm_type(self):
            return "my-chat"

        def _generate(self, messages, stop=None, run_manager=None, **params):
            self.calls += 1
            body = {"messages": [{"role": ROLES[m.type], "content": m.content} for m in messages],
                    "max_tokens": min(int(params.get("max_tokens", 96)), 96), "temperature": 0}
            request = urllib.request.Request(f"{self.url}/chat/completions",
                                             json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=300) as resp:
                text = json.load(resp)["choices"][0]["message"]["content"]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    ran = []

    def run_code(code, timeout):
        """The user's code runner (a sandbox of theirs; a child interpreter here)."""
        ran.append(code)
        done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True,
                              text=True, timeout=timeout)
        return done.stdout, (done.stderr[-500:] or "failed") if done.returncode else None

    modules = []
    for i, path in enumerate(sys.argv[2:]):
        spec = importlib.util.spec_from_file_location(f"exported_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    model = MyChat(url=sys.argv[1])
    out = modules[0].make_graph(model, python=run_code).invoke({"question": "What is 6 * 7?"})
    print(json.dumps({"answer": out["answer"], "calls": model.calls, "ran": len(ran),
                      "package": [m for m in sys.modules if m.startswith("harness_learning")
                                  and sys.modules[m] is not None]}))
''')


def variants() -> dict[str, str]:
    """Every operator that fits a seed, applied to it: each imports its block."""
    out = {}
    for seed in ("reasoning_direct", "multihop_two_hop"):
        for name, op in OPERATORS.items():
            try:
                out[f"{seed}+{name}"] = apply_operator(op, seed_source(seed))
            except OperatorError:
                continue
    return out


def test_blocks_are_inlined_so_only_langgraph_langchain_and_the_stdlib_are_imported() -> None:
    found = variants()
    assert len(found) >= 8 and all("harness_learning.harnesses.blocks" in s
                                   for s in found.values())
    for name, source in found.items():
        text = standalone_source(source)
        assert "from harness_learning" not in text and "import harness_learning" not in text
        extra = imported_roots(text) - set(sys.stdlib_module_names) - ALLOWED_ROOTS
        assert not extra and "def make_graph(" in text, (name, extra)
        compile(text, name, "exec")


def test_a_harness_needing_another_part_of_the_package_is_one_line() -> None:
    source = seed_source("reasoning_direct").replace(
        "from langgraph.graph", "from harness_learning.harnesses.toolbox import Toolbox\n"
        "from langgraph.graph", 1)
    with pytest.raises(StandaloneError, match=r"^line \d+: `from harness_learning\.harnesses"
                                              r"\.toolbox import Toolbox` needs this package"):
        standalone_source(source)


def test_export_standalone_writes_a_file_that_imports_no_package(sim_run, tmp_path,
                                                                  capsys) -> None:
    out = tmp_path / "standalone.py"
    with pytest.raises(SystemExit) as exited:
        main(["export", str(sim_run), "--out", str(out), "--standalone"])
    assert exited.value.code == 0
    text = out.read_text()
    assert "# use it: make_graph(chat_model" in text and "# run it:" not in text
    assert imported_roots(text) - set(sys.stdlib_module_names) <= ALLOWED_ROOTS
    assert 'PROMPT = """MARK-A ' in text and "(standalone)" in capsys.readouterr().err


def test_the_standalone_file_runs_without_the_package(local_model_url, tmp_path) -> None:
    """Run with `python -I` from an empty directory, no PYTHONPATH, the package blocked:
    the interpreter-wrapped seed asks the user's chat model (SmolLM2) and answers; every other
    operator's file imports there too (its inlined blocks define what they use)."""
    found = variants()
    first = tmp_path / "interpreter.py"
    first.write_text(standalone_source(found["reasoning_direct+interpreter"]))
    others = []
    for i, source in enumerate(v for k, v in found.items() if k != "reasoning_direct+interpreter"):
        others.append(tmp_path / f"other_{i}.py")
        others[-1].write_text(standalone_source(source))
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-I", str(tmp_path / "driver.py"), local_model_url,
                           str(first), *map(str, others)], cwd=empty, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["package"] == []  # nothing of harness_learning was imported
    assert isinstance(got["answer"], str) and got["calls"] >= 1
    assert got["calls"] >= got["ran"]  # every program run came from a model reply
