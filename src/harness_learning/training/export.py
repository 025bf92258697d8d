"""A trained student as a GGUF the local llama.cpp server loads, so `--proposer PATH.gguf` uses it.

llama.cpp's converter (convert_hf_to_gguf.py) does not ship with llama-cpp-python's wheel, but
the `gguf` package can write the file. A student is a fine-tune of a GGUF (the bundled SmolLM2,
the shipped Qwen2.5-Coder Proposer, or any GGUF of a supported architecture), so its tokenizer
and chat template are exactly that reference file's: the export copies every metadata key from
the reference, takes the shape keys (`{arch}.block_count`, ...) from the model's own config, and
writes the trained weights under llama.cpp's tensor names for the reference's architecture
(`gguf_arch`: qwen2 keeps its q/k/v biases; llama's q/k rows are rotary-interleaved again).
Tied embeddings have no `output.weight`. `max_difference` compares an export of the untrained
model with the reference file's dequantised tensors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness_learning.training.gguf_arch import (
    check_architecture,
    hyperparameters,
    tensors_to_gguf,
)
from harness_learning.training.gguf_arch import gguf_name as gguf_name
from harness_learning.training.gguf_arch import interleave_rotary as interleave_rotary

if TYPE_CHECKING:  # imported where they are used
    from gguf import GGUFValueType
    from transformers import PreTrainedModel

    from harness_learning.training.gguf_read import GGUFFile
    from harness_learning.training.loading import CausalLM

QUANT = "Q8_0"
"""Matrices are written Q8_0 (near-lossless, half of F16); 1-D norms and biases stay F32 as
llama.cpp expects."""

_MODEL_TYPES = {"llama": ("llama",), "qwen2": ("qwen2",)}
"""The transformers `model_type`s a reference architecture can hold."""


def gguf_tensors(model: PreTrainedModel, arch: str = "llama") -> Iterator[tuple[str, np.ndarray]]:
    """(llama.cpp name, float32 array) for every weight of a plain (LoRA-merged) model."""
    return tensors_to_gguf(model, arch)


def _metadata(file: GGUFFile, model: PreTrainedModel, arch: str, name: str
              ) -> Iterator[tuple[str, object, GGUFValueType, GGUFValueType | None]]:
    """(key, value, type, array sub-type) of the export: the reference's keys with the file
    type, the name and the shape keys replaced, then shape keys the reference lacks."""
    import gguf

    shape = hyperparameters(model.config, arch)
    for key, (vtype, sub, value) in file.fields.items():
        if key in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.ALIGNMENT):
            continue
        value = shape.pop(key, value)
        if key == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.MOSTLY_Q8_0)
        elif key == gguf.Keys.General.NAME and name:
            value = name
        yield (key, value, gguf.GGUFValueType(vtype),
               None if sub is None else gguf.GGUFValueType(sub))
    for key, value in shape.items():
        vtype = (gguf.GGUFValueType.FLOAT32 if isinstance(value, float)
                 else gguf.GGUFValueType.UINT32)
        yield key, value, vtype, None


def write_gguf(model: CausalLM, reference: Path, out: Path, name: str = "") -> Path:
    """Write `model`'s weights as `out` with `reference`'s metadata (architecture, tokenizer,
    chat template); the reference must be the GGUF the model was fine-tuned from, or one of
    the same architecture and tokenizer."""
    import gguf

    from harness_learning.training.gguf_read import read_gguf

    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    file = read_gguf(reference)
    arch = check_architecture(file.architecture, reference)
    model_type = getattr(model.config, "model_type", "")
    if model_type not in _MODEL_TYPES[arch]:
        raise ValueError(f"the model is a {model_type!r} but {reference} is a {arch!r} GGUF: "
                         "give the GGUF the model was trained from as the reference")
    tokens = len(file.get("tokenizer.ggml.tokens") or [])
    if tokens and tokens != model.config.vocab_size:
        raise ValueError(f"the model has {model.config.vocab_size} tokens but {reference}'s "
                         f"tokenizer {tokens}: give the GGUF the model was trained from as the "
                         "reference")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    writer = gguf.GGUFWriter(str(tmp), arch)
    qtype = gguf.GGMLQuantizationType[QUANT]
    for key, value, vtype, sub in _metadata(file, model, arch, name):
        writer.add_key_value(key, value, vtype, sub_type=sub)
    for target, array in tensors_to_gguf(model, arch):
        if array.ndim == 1 or array.shape[-1] % gguf.GGML_QUANT_SIZES[qtype][0]:
            writer.add_tensor(target, array.astype(np.float32))
        else:
            packed = gguf.quants.quantize(array, qtype)
            writer.add_tensor(target, packed, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)
    return out


def reference_gguf(checkpoint: Path) -> Path | None:
    """The GGUF a checkpoint was trained from: the `model` of the training run's config.json
    (OUT/config.json beside OUT/checkpoint), followed through checkpoints trained from
    checkpoints (SFT, then GRPO from the SFT student); None when it does not lead to a GGUF."""
    from harness_learning.training.loading import gguf_path

    for _ in range(8):  # a chain of runs; a cycle would be a hand-edited config
        config = Path(checkpoint).parent / "config.json"
        if not config.is_file():
            return None
        model = str(json.loads(config.read_text()).get("model", ""))
        gguf = gguf_path(model)
        if gguf is not None:
            return gguf
        if not (Path(model) / "config.json").is_file():
            return None
        checkpoint = Path(model)
    return None


def export_checkpoint(checkpoint: Path, reference: Path | None, out: Path) -> Path:
    """A saved checkpoint directory (`save_checkpoint`'s) as a GGUF at `out`; `reference`
    None: the GGUF it was trained from (`reference_gguf`)."""
    from transformers import AutoModelForCausalLM

    reference = reference or reference_gguf(Path(checkpoint))
    if reference is None:
        raise ValueError(f"{checkpoint} was not trained from a GGUF (its run's config.json names "
                         "no .gguf model): give the reference GGUF it was trained from")
    model = AutoModelForCausalLM.from_pretrained(str(checkpoint))
    return write_gguf(model, reference, out, name=Path(checkpoint).parent.name or "student")


def max_difference(exported: Path, reference: Path) -> dict[str, float]:
    """Per tensor of `reference`, the largest absolute difference from `exported` after both are
    dequantised (a tensor missing from the export counts as infinite)."""
    import gguf

    def tensors(path: Path) -> dict[str, np.ndarray]:
        return {t.name: gguf.quants.dequantize(t.data, t.tensor_type).reshape(
            [int(d) for d in reversed(t.shape)]) for t in gguf.GGUFReader(str(path)).tensors}

    mine, ref = tensors(exported), tensors(reference)
    return {name: float(np.max(np.abs(mine[name] - value))) if name in mine else float("inf")
            for name, value in ref.items()}
