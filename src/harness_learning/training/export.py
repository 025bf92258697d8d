"""A trained student as a GGUF the local llama.cpp server loads, so `--proposer PATH.gguf` uses it.

llama.cpp's converter (convert_hf_to_gguf.py) does not ship with llama-cpp-python's wheel, but
the `gguf` package can write the file. A student is a fine-tune of the bundled SmolLM2 GGUF, so
its architecture, tokenizer and chat template are exactly the reference file's: the export copies
every metadata key from that reference and writes the trained weights under llama.cpp's tensor
names. Two details make it right: llama.cpp stores the query and key projections with each
head's rotary halves interleaved (transformers undoes that when it loads a GGUF, so the export
redoes it), and tied embeddings have no `output.weight`. `max_difference` compares an export
of the untrained model with the reference file's dequantised tensors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

QUANT = "Q8_0"
"""Matrices are written Q8_0 (near-lossless, half of F16); 1-D norms stay F32 as llama.cpp
expects."""

_LAYER = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight"}


def gguf_name(hf_name: str) -> str | None:
    """llama.cpp's tensor name for a transformers Llama weight (None: not a weight we write)."""
    if hf_name in _TOP:
        return _TOP[hf_name]
    parts = hf_name.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in _LAYER:
        return f"blk.{parts[2]}.{_LAYER[parts[3]]}"
    return None


def interleave_rotary(weight: np.ndarray, n_head: int) -> np.ndarray:
    """transformers' rotary layout (halves) -> llama.cpp's (pairs), per head: the inverse of
    the permutation transformers applies when it reads a llama GGUF."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def gguf_tensors(model: Any) -> Iterator[tuple[str, np.ndarray]]:
    """(llama.cpp name, float32 array) for every weight of a plain (LoRA-merged) Llama."""
    config = model.config
    n_head, n_kv = config.num_attention_heads, config.num_key_value_heads
    tied = bool(getattr(config, "tie_word_embeddings", False))
    for name, tensor in model.state_dict().items():
        target = gguf_name(name)
        if target is None or (tied and target == "output.weight"):
            continue
        array = tensor.detach().float().cpu().numpy()
        if target.endswith("attn_q.weight"):
            array = interleave_rotary(array, n_head)
        elif target.endswith("attn_k.weight"):
            array = interleave_rotary(array, n_kv)
        yield target, array


def write_gguf(model: Any, reference: Path, out: Path, name: str = "") -> Path:
    """Write `model`'s weights as `out` with `reference`'s metadata (architecture, tokenizer,
    chat template); the reference must be the GGUF the model was fine-tuned from."""
    import gguf

    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    reader = gguf.GGUFReader(str(reference))
    arch = str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    if arch != "llama":
        raise ValueError(f"{reference}: architecture {arch!r}, only llama students export")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    writer = gguf.GGUFWriter(str(tmp), arch)
    qtype = gguf.GGMLQuantizationType[QUANT]
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value = field.contents()
        if field.name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.MOSTLY_Q8_0)
        elif field.name == gguf.Keys.General.NAME and name:
            value = name
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    for target, array in gguf_tensors(model):
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


def export_checkpoint(checkpoint: Path, reference: Path, out: Path) -> Path:
    """A saved checkpoint directory (`save_checkpoint`'s) as a GGUF at `out`."""
    from transformers import AutoModelForCausalLM

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
