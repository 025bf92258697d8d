"""The package installs as one namespace: `harness_learning` is the only top-level name a user
gets, every package folder is in the build's list, and nothing imports a layer by its bare name.
Installed from its wheel into a fresh environment, it runs from any directory, sandbox included."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "harness_learning"
LAYERS = ("cli", "report", "graphs", "harnesses", "retrieval", "training", "evals")


def test_the_build_finds_the_package_under_src_and_nothing_beside_it():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "src"}
    assert setuptools["packages"]["find"] == {"where": ["src"],
                                              "include": ["harness_learning", "harness_learning.*"]}


def test_every_folder_of_python_files_is_a_package_the_build_finds():
    """The build finds packages by their `__init__.py`: a folder of modules without one would
    be left out of the wheel without a word."""
    folders = {py.parent for py in PACKAGE.rglob("*.py") if "__pycache__" not in py.parts}
    assert folders and sorted(str(f.relative_to(ROOT)) for f in folders
                              if not (f / "__init__.py").is_file()) == []
    assert {f.name for f in PACKAGE.iterdir() if (f / "__init__.py").is_file()} == set(LAYERS)


def _project_sources() -> list[Path]:
    dirs = ["src", "lab", "tests", "examples", "scripts"]
    return [p for d in dirs for p in (ROOT / d).rglob("*.py")]


def test_nothing_imports_a_layer_by_its_bare_name():
    bare = []
    for path in _project_sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            bare += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in LAYERS]
    assert bare == []


def test_import_is_cheap_and_public_names_resolve():
    code = ("import sys, harness_learning as hl; heavy = [m for m in ('langgraph', 'litellm', "
            "'torch') if m in sys.modules]; assert not heavy, heavy; "
            "print(hl.adapt.__module__, hl.load_harness.__module__, hl.Task.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["harness_learning.graphs.adapter.api",
                                  "harness_learning.graphs.serving.embed", "Task"]


def fresh_environment(root: Path) -> Path:
    """A virtualenv at `root` whose site-packages holds what a sandbox worker may import
    (the allowlisted distributions, as a real install of the wheel's dependencies would put
    them there; hard links where the filesystem allows), and a path file naming this
    environment's site-packages for the parent side's other dependencies. The worker's view
    is built from the fresh site-packages alone, so it never reads that path file; this
    environment's own editable install is left out. Returns the fresh site-packages."""
    from harness_learning.harnesses.sandbox import imports

    venv.create(root, with_pip=True)
    site = Path(subprocess.check_output([str(root / "bin" / "python"), "-c", "import sysconfig; "
                                         "print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    deps, entries = imports.site_view()
    for entry in entries:
        if entry.startswith("__editable__"):
            continue
        if (Path(deps) / entry).is_dir():
            shutil.copytree(Path(deps) / entry, site / entry, copy_function=imports._link_or_copy)
        else:
            imports._link_or_copy(str(Path(deps) / entry), str(site / entry))
    (site / "zz_dependencies.pth").write_text(deps + "\n")
    return site


HARNESS_RUN = """
from harness_learning import load_harness
graph = load_harness("reasoning_direct", model="local")
try:
    out = graph.invoke({"question": "What is 2 + 3?"})
finally:
    graph.harness_runner.close()
calls = [c for c in out["calls"] if c["tool"] == "llm"]
assert calls and not [c for c in calls if c.get("error")], out["calls"]
print("answer", repr(out["answer"]))
"""


@pytest.mark.slow
def test_the_wheel_installs_one_top_level_package_and_the_cli_runs(local_model_url, tmp_path):
    # Build from a copy: setuptools leaves a build/ folder in the source tree, and a stale one
    # would put deleted modules into the wheel.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "runs", "*.egg-info", "__pycache__", ".langgraph_api"))
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-w", str(dist), str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("harness_learning-*.whl")

    env_dir = tmp_path / "fresh"
    site = fresh_environment(env_dir)
    py = env_dir / "bin" / "python"
    before = {p.name for p in site.iterdir()}
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                              str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    added = {p.name for p in site.iterdir()} - before
    assert {n for n in added if not n.endswith(".dist-info")} == {"harness_learning"}

    # The other dependencies come from this test's own environment, as a plain path: its site
    # dir's .pth files (the editable install among them) are not processed, so only the
    # wheel's copy of harness_learning can be imported.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(py), "-c", "import harness_learning.cli as c; print(c.__file__)"],
                           capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert where.returncode == 0, where.stderr[-2000:]
    assert where.stdout.strip().startswith(str(site))
    cli = subprocess.run([str(env_dir / "bin" / "harness-learn"), "--help"], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert "adapt" in cli.stdout

    # Installed, not checked out: from another directory `studio` runs (it writes its own
    # langgraph.json naming the graphs by module; nothing points into a checkout).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    exe = str(env_dir / "bin" / "harness-learn")
    studio = subprocess.run([exe, "studio", "--help"], capture_output=True, text=True,
                            timeout=300, env=env, cwd=elsewhere)
    assert studio.returncode == 0 and "--settings" in studio.stdout, studio.stderr[-2000:]

    # The sandbox worker, started by the installed interpreter, imports the installed package
    # (it lies inside the site-packages the worker's view covers): a seed runs through `run`
    # and through `load_harness`, on SmolLM2, from that directory.
    run = subprocess.run([exe, "run", "--task", "rg:basic_arithmetic", "--model", "local",
                          "--n", "1", "--json"], capture_output=True, text=True, timeout=300,
                         env=env, cwd=elsewhere)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["completed_fraction"] == 1.0 and summary["invalid"] == 0, summary
    loaded = subprocess.run([str(py), "-c", HARNESS_RUN], capture_output=True, text=True,
                            timeout=300, env=env, cwd=elsewhere)
    assert loaded.returncode == 0 and "answer" in loaded.stdout, loaded.stderr[-3000:]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_venv_rebuilds_llama_cpp_when_its_pin_or_flags_change(tmp_path):
    """The llama.cpp build's stamp is named by its pin and compiler flags: a .venv built before a
    change to either (an AMX build that crashed every server, say) is rebuilt by `make venv`,
    and one built with the current ones is left alone."""
    env = tmp_path / ".venv"
    env.mkdir()

    def make(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={env}",
                               *flags, "venv"], capture_output=True, text=True)

    plan = make("-n").stdout
    assert "--force-reinstall" in plan and "--no-cache-dir" in plan
    stamp = next(word for word in plan.split() if "/.llama-cpp-" in word and "*" not in word)
    Path(stamp).touch()
    (env / ".installed").touch()
    assert make("-q").returncode == 0, "a .venv built with the current flags is up to date"
    Path(stamp).rename(env / ".llama-cpp-000000000000")  # built with other flags
    assert make("-q").returncode == 1
    again = make("-n").stdout
    assert "--force-reinstall" in again and f"rm -f {env}/.llama-cpp-*" in again
