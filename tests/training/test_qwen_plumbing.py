"""Training the Proposer the project ships, end to end at a tiny size: a random Qwen2 (the
shipped Proposer's architecture) with the shipped Qwen GGUF's tokenizer is written as a GGUF,
rebuilt from it through the same path as the real 1.5B, trained by LoRA SFT with mid-stage
checkpoints (killed, a damaged checkpoint refused, resumed on the same curve), exported, and
served by llama.cpp as `--proposer PATH.gguf`."""

from __future__ import annotations

import json
import logging
import shutil
import zipfile

import pytest
import torch

from harness_learning.training.config import SFTTrainConfig

PAIRS = [
    ("Make the harness retry on a parse error.", "Wrap the call in a loop of three tries."),
    ("Extract the final answer more robustly.", "Take the text after the last 'Answer:'."),
    ("Let the solver check its arithmetic.", "Run its expression with tools.python."),
    ("Shorten the prompt.", "Drop the second paragraph of PROMPT."),
]


@pytest.fixture(scope="module")
def qwen_tiny(tmp_path_factory):
    """(the tiny Qwen2 model, its GGUF): the tokenizer and metadata read from the shipped
    Qwen2.5-Coder GGUF (`harness-learn models fetch`), weights random (hidden 64, 2 layers)."""
    from harness_learning.harnesses.llm.models import MODELS, QWEN_CODER
    from harness_learning.training.export import write_gguf
    from harness_learning.training.gguf_read import read_gguf
    from harness_learning.training.loading import load_tokenizer, tiny_qwen2

    shipped = MODELS[QWEN_CODER].path()
    vocab = next(t for t in read_gguf(shipped).tensors if t.name == "token_embd.weight").shape[0]
    model = tiny_qwen2(vocab, tokenizer=load_tokenizer(str(shipped)))
    gguf = write_gguf(model, shipped, tmp_path_factory.mktemp("qwen") / "tiny-qwen2.gguf",
                      name="tiny-qwen2")
    return model, gguf


def _dataset():
    from datasets import Dataset

    return Dataset.from_list([{"prompt": [{"role": "user", "content": p}],
                               "completion": [{"role": "assistant", "content": c}]}
                              for p, c in PAIRS])


def _sft(gguf, out, callbacks=()):
    from harness_learning.training.sft import fit_sft

    config = SFTTrainConfig(model=str(gguf), out=str(out), max_steps=4, batch_size=1,
                            learning_rate=1e-2, max_length=256, save_steps=2, seed=3)
    return fit_sft(_dataset(), config, [], None, "SFT", progress=False, callbacks=callbacks)


def _losses(result) -> list[float]:
    rows = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


class Killed(Exception):
    """Stands in for the process dying (the trainer does not catch it)."""


def _kill_at(step: int):
    from transformers import TrainerCallback

    class KillAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == step:  # after the step, before its log and save
                raise Killed(step)

    return KillAt()


def test_tiny_qwen2_rebuilds_trains_resumes_exports_and_serves(qwen_tiny, tmp_path, caplog):
    from harness_learning.training.export import export_checkpoint
    from harness_learning.training.loading import load_model

    original, gguf = qwen_tiny
    rebuilt = load_model(str(gguf))
    assert type(rebuilt).__name__ == "Qwen2ForCausalLM"
    assert rebuilt.model.layers[0].self_attn.q_proj.bias is not None
    ids = torch.tensor([[9707, 11, 1879, 0, 151645]])
    with torch.no_grad():
        diff = (original(ids).logits - rebuilt(ids).logits).abs().max().item()
    assert diff < 0.05  # Q8_0 round trip of the random weights

    straight = _losses(_sft(gguf, tmp_path / "straight"))
    with pytest.raises(Killed):
        _sft(gguf, tmp_path / "killed", callbacks=[_kill_at(3)])
    trainer_dir = tmp_path / "killed" / "trainer"
    assert (trainer_dir / "checkpoint-2").is_dir() and not (trainer_dir / "checkpoint-3").exists()
    # a later checkpoint cut off mid-save: its adapter truncated
    shutil.copytree(trainer_dir / "checkpoint-2", trainer_dir / "checkpoint-3")
    adapter = trainer_dir / "checkpoint-3" / "adapter_model.safetensors"
    adapter.write_bytes(adapter.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="harness_learning.training.resume"):
        resumed = _sft(gguf, tmp_path / "killed")
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1 and "checkpoint-3" in refused[0]
    assert "resuming from checkpoint-2" in refused[0] and "\n" not in refused[0]
    assert (trainer_dir / "refused-checkpoint-3" / "adapter_model.safetensors").is_file()
    assert len(straight) == 4 and _losses(resumed) == pytest.approx(straight, abs=1e-4)

    exported = export_checkpoint(resumed.checkpoint, None, tmp_path / "student.gguf")
    assert _served_reply_tokens(exported) > 0


def _served_reply_tokens(gguf) -> int:
    """Completion tokens of one chat request to the local llama.cpp server that `--proposer
    PATH.gguf` starts. Read raw: a random model's reply is blank lines, which the model
    client rightly treats as an empty completion."""
    import httpx

    from harness_learning.harnesses.llm import ensure_local_server
    from harness_learning.harnesses.llm.config import ModelConfig
    from harness_learning.harnesses.llm.local import running_server
    from harness_learning.harnesses.llm.models import local_model

    name = ModelConfig.parse(str(gguf)).local_name  # the spec `--proposer PATH.gguf` gives
    url = ensure_local_server(name=name)
    try:
        reply = httpx.post(f"{url}/chat/completions", timeout=60, json={
            "model": local_model(name).alias, "max_tokens": 4, "temperature": 0.0,
            "messages": [{"role": "user", "content": "Improve the harness."}]}).json()
    finally:
        running_server(name).stop()
    return reply["usage"]["completion_tokens"]


def test_gguf_of_an_unknown_architecture_is_refused_in_one_line(tmp_path):
    import gguf

    from harness_learning.training.loading import load_model, load_tokenizer

    path = tmp_path / "gemma.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_tensor("token_embd.weight", torch.zeros(4, 32).numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for load in (load_model, load_tokenizer):  # `train sft` reads the tokenizer first
        with pytest.raises(ValueError) as err:
            load(str(path))
        message = str(err.value)
        assert "'gemma3'" in message and "llama, qwen2" in message and "\n" not in message


def _fake_checkpoint(folder, step: int):
    """A checkpoint's files as the trainer writes them (tiny contents, real formats)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({"lora_A": torch.zeros(2, 2)}, str(folder / "adapter_model.safetensors"))
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.save({"step": step}, folder / name)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))


@pytest.mark.parametrize("damage", ["no_state", "bad_zip", "crc"])
def test_a_damaged_checkpoint_is_set_aside_with_one_line(tmp_path, damage):
    from harness_learning.training.resume import resume_point

    _fake_checkpoint(tmp_path / "checkpoint-2", 2)
    newest = tmp_path / "checkpoint-4"
    _fake_checkpoint(newest, 4)
    if damage == "no_state":
        (newest / "trainer_state.json").unlink()
    elif damage == "bad_zip":
        (newest / "optimizer.pt").write_bytes((newest / "optimizer.pt").read_bytes()[:50])
    else:
        data = bytearray((newest / "scheduler.pt").read_bytes())
        with zipfile.ZipFile(newest / "scheduler.pt") as archive:
            info = archive.infolist()[0]
        head = info.header_offset  # the local header's own name and extra lengths
        at = head + 30 + int.from_bytes(data[head + 26:head + 28], "little") + int.from_bytes(
            data[head + 28:head + 30], "little")
        data[at] ^= 0xFF  # the first byte of the first member's data
        (newest / "scheduler.pt").write_bytes(bytes(data))
    said = []
    assert resume_point(tmp_path, said.append) == tmp_path / "checkpoint-2"
    assert len(said) == 1 and "checkpoint-4 refused" in said[0]
    assert (tmp_path / "refused-checkpoint-4").is_dir() and not newest.exists()
    said.clear()
    (tmp_path / "checkpoint-2" / "rng_state.pth").unlink()
    assert resume_point(tmp_path, said.append) is None
    assert said == [f"SFT checkpoint {tmp_path / 'checkpoint-2'} refused: rng_state.pth missing; "
                    "kept as refused-checkpoint-2, starting again from step 0"]


def test_checkpoints_of_another_configuration_are_not_resumed(tmp_path):
    from harness_learning.training.resume import check_same_run

    (tmp_path / "config.json").write_text(json.dumps({"max_steps": 4, "save_steps": 2}))
    check_same_run(tmp_path, {"max_steps": 4, "save_steps": 1})  # saving more often: fine
    with pytest.raises(ValueError, match=r"max_steps: 4 -> 6\): give a new --out"):
        check_same_run(tmp_path, {"max_steps": 6, "save_steps": 2})


def test_export_refuses_a_reference_of_another_architecture_or_vocabulary(tmp_path):
    from harness_learning.harnesses.llm.models import MODELS, QWEN_CODER
    from harness_learning.training.export import write_gguf
    from harness_learning.training.loading import smollm2_gguf_path, tiny_qwen2

    model = tiny_qwen2(1000)
    with pytest.raises(ValueError, match=r"model is a 'qwen2' but .* is a 'llama' GGUF"):
        write_gguf(model, smollm2_gguf_path(), tmp_path / "a.gguf")
    with pytest.raises(ValueError, match=r"model has 1000 tokens but .* tokenizer 151936"):
        write_gguf(model, MODELS[QWEN_CODER].path(), tmp_path / "b.gguf")
    assert not list(tmp_path.iterdir())  # nothing half-written
