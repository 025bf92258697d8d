"""The Proposer-SFT experiment's settings (`experiments/proposer_sft.toml`): which types it
collects demonstrations on, which it tests on, and at what size.

Training, held-out and control types are drawn from `experiments/task_types.toml`, the table
measured before any learner was scored: training and held-out types must be types with
headroom there (the interpreter gains at least 0.25), control types ones where it does not
help. The three sets must be disjoint; `--heldout-types` swaps the held-out set for another
without retraining, and an overlap with the training types is one line naming the types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from harness_learning_lab.scaled_toml import at_scale, read_toml

KIND = "proposer_sft"
SCALES = ("paper", "smoke")


@dataclass
class SFTExperimentSpec:
    name: str
    kind: str = KIND
    scale: str = "paper"
    task_types: str = "experiments/task_types.toml"
    """The measured table the types come from (relative to the config's folder's parent)."""
    train_types: list[str] = field(default_factory=list)
    heldout_types: list[str] = field(default_factory=list)
    control_types: list[str] = field(default_factory=list)
    solver: str = "local:qwen2.5-coder-1.5b"
    proposer: str = "local:qwen2.5-coder-1.5b"
    """The base Proposer: it writes the collected edits, and its weights are the student's."""
    student: str = "qwen2.5-coder-1.5b"
    """What is fine-tuned (`TrainConfig.model`): the base Proposer's GGUF."""
    shapes: list[str] = field(default_factory=lambda: ["reasoning_direct", "reasoning_respond"])
    """Seed harness shapes the demonstrations are collected on."""
    heldout_shapes: list[str] = field(default_factory=lambda: ["reasoning_direct"])
    """Shapes the arms edit on held-out and control types (cycled over the seeds): seed names,
    or harness files such as experiments/shapes/reasoning_unseen.py, a shape no demonstration
    shows."""
    collect_seeds: list[int] = field(default_factory=lambda: [0, 1])
    collect_rounds: int = 3
    collect_candidates: int = 2
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    edits: int = 6
    """Single-step edits of the seed per arm, (type, seed)."""
    relay_rounds: int = 3
    """One relay (N rounds x 1 edit) per Proposer arm, type and relay seed; 0: none."""
    relay_seeds: int = 1
    """Relays run on the first N of `seeds` only: the table needs one relay per Proposer arm
    and type, and each costs about `relay_rounds` single-step arms of time."""
    feedback: int = 4
    selection: int = 8
    n_dev: int = 24
    n_test: int = 24
    report_chars: int = 1000
    """The report's budget in characters (every stage and arm): the prompt's one part the
    experiment sizes; the demonstrations stage measures and prints the prompt's tokens."""
    solver_max_tokens: int = 512
    proposer_max_tokens: int = 768
    proposer_temperature: float = 0.7
    concurrency: int = 2
    task_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    demo_keep_ties: bool = False
    """Also learn collected candidates level with their parent (not only above it): for the
    smoke run only, whose 135M Solver rarely lets any candidate win on 2 problems."""
    sft_epochs: float = 2.0
    sft_learning_rate: float = 2e-4
    sft_max_length: int = 2304
    sft_save_steps: int = 4
    sft_bf16: bool = True
    """The student in bfloat16 with checkpointed activations (`train sft --bf16-cpu`): the
    1.5B in float32 was killed at 15.8 GB at 1,024 tokens."""
    lora_r: int = 16

    def __post_init__(self) -> None:
        if not self.train_types or not self.heldout_types:
            raise ValueError("train_types and heldout_types must both be given")
        if not self.shapes or not self.heldout_shapes or not self.seeds:
            raise ValueError("shapes, heldout_shapes and seeds must not be empty")
        if min(self.edits, self.collect_rounds, self.collect_candidates) < 1:
            raise ValueError("edits, collect_rounds and collect_candidates must be >= 1")
        if min(self.relay_rounds, self.relay_seeds) < 0:
            raise ValueError("relay_rounds and relay_seeds must be >= 0 (0: no relay)")
        check_disjoint(self.train_types, self.heldout_types, self.control_types)

    @property
    def test_types(self) -> list[str]:
        return [*self.heldout_types, *self.control_types]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_disjoint(train: list[str], heldout: list[str], control: list[str]) -> None:
    """One line naming the shared types when the sets overlap."""
    for other, name in ((heldout, "held-out"), (control, "control")):
        shared = sorted(set(train) & set(other))
        if shared:
            raise ValueError(f"{name} types overlap the training types: {', '.join(shared)} "
                             f"(training: {', '.join(train)}); choose {name} types the "
                             "student never trained on")
    shared = sorted(set(heldout) & set(control))
    if shared:
        raise ValueError(f"held-out and control types overlap: {', '.join(shared)}")


def check_types(spec: SFTExperimentSpec, table: Path) -> None:
    """Every type is in the measured table with the class its role needs."""
    data = read_toml(table, "task-type table")
    headroom, control = set(data.get("headroom", [])), set(data.get("control", []))
    for role, types, allowed in (("training", spec.train_types, headroom),
                                 ("held-out", spec.heldout_types, headroom),
                                 ("control", spec.control_types, control)):
        bad = [t for t in types if t not in allowed]
        if bad:
            kind = "headroom" if allowed is headroom else "control"
            raise ValueError(f"{role} type(s) {', '.join(bad)} are not {kind} types in {table} "
                             f"({kind}: {', '.join(sorted(allowed)) or 'none'})")


def parse_types(text: str) -> list[str]:
    """`rg:a,rg:b` -> ['rg:a', 'rg:b'] (a bare name gets the `rg:` prefix)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("--heldout-types is empty: give types such as rg:gcd,rg:lcm")
    return [t if ":" in t else f"rg:{t}" for t in names]


def is_sft_config(path: str | Path) -> bool:
    """The file is a Proposer-SFT experiment (its `kind`), not a track experiment."""
    return read_toml(Path(path), "experiment config").get("kind") == KIND


def load_sft_spec(path: str | Path, scale: str = "paper",
                  heldout: list[str] | None = None) -> SFTExperimentSpec:
    """Read `path` at `scale`; `heldout` replaces its held-out types."""
    path = Path(path)
    merged = at_scale(read_toml(path, "experiment config"), SCALES, scale, path, required=False)
    known = {f.name for f in fields(SFTExperimentSpec)} - {"scale"}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; known: {sorted(known)}")
    if heldout is not None:
        merged["heldout_types"] = heldout
    try:
        spec = SFTExperimentSpec(**merged, scale=scale)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path} [{scale}]: {err}") from None
    root = path.resolve().parent.parent  # paths in the file are relative to the repository
    table = Path(spec.task_types)
    check_types(spec, table if table.is_absolute() else root / table)
    spec.shapes, spec.heldout_shapes = ([_shape(s, root) for s in shapes]
                                        for shapes in (spec.shapes, spec.heldout_shapes))
    return spec


def _shape(shape: str, root: Path) -> str:
    """A seed name as is; a harness file made absolute (one line when it is missing)."""
    if not shape.endswith(".py"):
        return shape
    found = Path(shape) if Path(shape).is_absolute() else root / shape
    if not found.is_file():
        raise FileNotFoundError(f"harness shape {shape} not found (looked at {found})")
    return str(found)
