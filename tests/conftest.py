"""Suite-wide fixtures: the shared data directory and one local model server per test run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The suite runs its workers on the local backend, whose protections (one cgroup per candidate,
# bubblewrap) its tests check; `auto` would pick Docker wherever an engine holds the sandbox
# image. The Docker backend's own tests ask for it by name.
os.environ.setdefault("HARNESS_SANDBOX", "local")
# The data folder is a setting with no default in the package; the suite's is beside the
# repository (as the Makefile sets it).
os.environ.setdefault("HARNESS_LEARNING_DATA", str(REPO.parent / "shared" / "data"))

# Modules whose tests start `langgraph dev` servers (each serves from a folder of its own, but
# several at once overload the machine's cores and time out) run in one worker, in turn; so do
# the modules that read the simulated run (`sim_run`, tests/graphs/conftest.py: three CLI runs,
# 26 s in a fresh run), which each worker that ran one of them used to build again.
ONE_WORKER_GROUPS = {
    "studio": ("tests/graphs/serving/test_studio",),
    "sim_run": tuple(f"tests/graphs/test_{name}.py" for name in (
        "cli_errors", "export_cmd", "export_standalone", "extend_run", "hostile_text",
        "run_report")),
}


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def worker_unit(nodeid: str) -> str:
    """What one xdist worker runs whole: the test's module, or the group its module is in."""
    module = module_of(nodeid)
    return next((name for name, prefixes in ONE_WORKER_GROUPS.items()
                 if module.startswith(prefixes)), module)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under `pytest -n N` (as `make test` runs): each worker unit is sent to one worker whole, so
    a module-scoped fixture (a real adaptation, a built index) is made once. xdist's own
    `loadgroup` cannot do this here: it renames node ids, which pytest 9.2 no longer allows."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkerUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_unit(nodeid)

    return WorkerUnits(config, log)


# Modules that use no real model yet take half a minute or more (a fresh run's `--durations`:
# the fault suite's clean runs, the hostile catalogue on both backends, the grid on Ray, the
# report's shared experiment). Collected last (tests/lab sorts late), one of them would start
# near the end and leave the other worker idle while it ran.
LONG_WITHOUT_MODEL = ("tests/lab/reliability/", "tests/lab/test_on_ray.py",
                      "tests/lab/experiments/test_report.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with a `slow` test go first, then the long ones without a model (kept in order by
    `--no-loadscope-reorder`), so the longest work starts early and a run ends on short modules
    that even out the workers."""
    slow = {module_of(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        module = module_of(item.nodeid)
        return 0 if module in slow else 1 if module.startswith(LONG_WITHOUT_MODEL) else 2

    items.sort(key=rank)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Real data fixtures (`HARNESS_LEARNING_DATA`, default ../shared/data); skip if absent."""
    path = Path(os.environ.get("HARNESS_LEARNING_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"data directory {path} not found (set HARNESS_LEARNING_DATA)")
    return path


@contextmanager
def exported(name: str, value: str) -> Iterator[str]:
    """`value` in environment variable `name` while the block runs (then as it was)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield value
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@pytest.fixture(scope="session")
def local_model_url() -> Iterator[str]:
    """Base URL of the real local model (SmolLM2-135M via llama-cpp-python), started once for
    the whole run and exported in HARNESS_LEARNING_LOCAL_URL so subprocesses reuse it."""
    from harness_learning.harnesses.llm import LOCAL_URL_ENV, ensure_local_server

    with exported(LOCAL_URL_ENV, ensure_local_server()) as url:
        yield url


@pytest.fixture(scope="session")
def qwen_url() -> Iterator[str]:
    """Base URL of the real Qwen2.5-Coder-1.5B server (the Solver that can use strategies, and
    the default Proposer), started once for the whole run and exported in
    HARNESS_LEARNING_PROPOSER_URL so every client and subprocess of the run reuses it."""
    from harness_learning.harnesses.llm import ensure_local_server
    from harness_learning.harnesses.llm.models import MODELS, QWEN_CODER

    with exported(MODELS[QWEN_CODER].url_env, ensure_local_server(name=QWEN_CODER)) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a throwaway PostgreSQL server (tests/support/pg_server.py), started once for the
    whole run. Without server binaries the tests that need it skip, except under CI=true,
    where that fails the run: CI installs the server (`make postgres-server`, run by `make test`)."""
    from pg_server import NoServer, postgres_server

    try:
        server = postgres_server()
        url = server.__enter__()
    except NoServer as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {exc}")
        pytest.skip(str(exc))
    from harness_learning.harnesses.store.pgurl import give

    give(url)  # the tests' own server: connected to from this process without --store
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
