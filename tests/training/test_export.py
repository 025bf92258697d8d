"""Exporting a student as a GGUF the local llama.cpp server loads (training/export.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness_learning.training.export import gguf_name, interleave_rotary


@pytest.mark.parametrize(("n_head", "n_kv"), [(9, 9), (9, 3)])
def test_rotary_interleave_is_undone_by_the_gguf_loader(n_head, n_kv):
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    undo = LlamaTensorProcessor()._reverse_permute_weights
    rows = n_kv * 8
    weight = np.random.default_rng(0).normal(size=(rows, 12)).astype(np.float32)
    exported = interleave_rotary(weight, n_kv)
    assert not np.array_equal(exported, weight)
    assert np.array_equal(undo(exported, n_head, n_kv), weight)


def test_weights_get_llama_cpp_names():
    assert gguf_name("model.embed_tokens.weight") == "token_embd.weight"
    assert gguf_name("model.layers.12.self_attn.k_proj.weight") == "blk.12.attn_k.weight"
    assert gguf_name("model.layers.0.post_attention_layernorm.weight") == "blk.0.ffn_norm.weight"
    assert gguf_name("model.layers.0.self_attn.rotary_emb.inv_freq") is None


@pytest.mark.slow
def test_the_untrained_student_exports_to_what_llama_cpp_reads_as_the_original(tmp_path):
    from llama_cpp import Llama

    from harness_learning.training.export import max_difference, write_gguf
    from harness_learning.training.loading import load_model, smollm2_gguf_path

    reference = smollm2_gguf_path()
    out = write_gguf(load_model("smollm2"), reference, tmp_path / "base.gguf")
    diff = max_difference(out, reference)
    assert len(diff) == 272 and max(diff.values()) < 0.05  # Q4_1 re-packed as Q8_0
    messages = [{"role": "user", "content": "What is 2+3? Reply with the number."}]
    replies = []
    for path in (reference, out):
        llm = Llama(model_path=str(path), n_threads=1, n_ctx=512, verbose=False)
        replies.append(llm.create_chat_completion(messages, temperature=0, max_tokens=16)
                       ["choices"][0]["message"]["content"])
    assert "5" in replies[0] and replies[1] == replies[0]
