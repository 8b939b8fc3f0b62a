"""Our GRPO trainer on a Hugging Face causal LM (grpo.lm.hf) and its command line (grpo.experiments.hf_cli),
offline on a tiny random model (chapter 8)."""
import math
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

pytest.importorskip("transformers")

from grpo.experiments import hf_cli as cli  # noqa: E402
from grpo.lm import data, hf  # noqa: E402
from grpo.lm.grpo import PRESETS  # noqa: E402
from grpo.lm.model import Sampling  # noqa: E402
from hf_stand_in import tiny_causal_lm  # noqa: E402

torch.set_num_threads(1)



OPT = {name: preset.loss_options() for name, preset in PRESETS.items()}

def digits(completion, answer):
    """A stand-in reward with contrast inside a group even for a random model."""
    return float(sum(ch.isdigit() for ch in completion))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    model, tokenizer = tiny_causal_lm(seed=0)
    model.save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    rng = random.Random(0)
    data.write_jsonl([data.make_problem(rng, 1) for _ in range(6)], root / "train.jsonl")
    return root


def small_config(root, **changes):
    return hf.HFConfig(**{**dict(model=str(root / "model"), gsm8k=str(root / "train.jsonl"), steps=1,
                                 prompts=2, G=4, max_new_tokens=12, device="cpu", lr=1e-3), **changes})


def test_one_offline_step_gives_a_finite_loss_and_changes_the_weights(tiny):
    from transformers import AutoModelForCausalLM
    policy, history = cli.train_gsm8k(small_config(tiny), verifier=digits, log=lambda s: None)
    start = AutoModelForCausalLM.from_pretrained(tiny / "model")
    assert len(history) == 1 and math.isfinite(history[0]["loss"])
    assert history[0]["degenerate_fraction"] < 1.0 and history[0]["kl_mean"] == 0.0   # ref = start
    changed = [not torch.equal(p, q) for p, q in zip(policy.parameters(), start.parameters())]
    assert any(changed)


def test_reuse_steps_clip_and_presets_run(tiny):
    for changes in (dict(reuse=3, lr=1e-2), OPT["dapo"], OPT["dr_grpo"]):
        _, history = cli.train_gsm8k(small_config(tiny, **changes), verifier=digits, log=lambda s: None)
        assert math.isfinite(history[0]["loss"])
    _, history = cli.train_gsm8k(small_config(tiny, reuse=4, lr=0.05), verifier=digits, log=lambda s: None)
    assert history[0]["clip_fraction"] > 0                 # the 2nd-4th passes leave pi_old behind


def test_chunks_of_groups_take_the_same_step(tiny):
    """chunk_groups only trades memory for passes: one group at a time gives the same update."""
    runs = [cli.train_gsm8k(small_config(tiny, chunk_groups=k), verifier=digits, log=lambda s: None)
            for k in (1, 2)]
    (p1, h1), (p2, h2) = runs
    assert h1[0]["loss"] == pytest.approx(h2[0]["loss"], abs=1e-6)
    assert h1[0]["kl_mean"] == h2[0]["kl_mean"] and h1[0]["reward_mean"] == h2[0]["reward_mean"]
    assert max((a - b).abs().max().item() for a, b in zip(p1.parameters(), p2.parameters())) < 1e-6


def test_command_line_runs_offline_with_the_verifier(tiny, capsys):
    out = tiny / "trained"
    cli.main(["--model", str(tiny / "model"), "--gsm8k", str(tiny / "train.jsonl"), "--steps", "1",
             "--G", "2", "--prompts", "1", "--max_new_tokens", "8", "--device", "cpu",
             "--out", str(out), "--preset", "dapo"])
    printed = capsys.readouterr().out
    assert "'eps_high': 0.28" in printed and "step 1/1" in printed
    assert (out / "config.json").exists()


def test_logprobs_are_those_generate_sampled_from(tiny):
    """pi_old's log-probs, read with one forward pass at T, equal the sampler's own (left padding)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
    model = AutoModelForCausalLM.from_pretrained(tiny / "model")
    tokenizer = AutoTokenizer.from_pretrained(tiny / "model")
    questions = ["What is 2 + 3?", "Ava has 12 apples and gives 5 away. How many are left?"]
    torch.manual_seed(0)
    ids, attn, mask, n_prompt, texts = hf.generate_groups(model, tokenizer, questions, 3, 0.7, 10)
    logp, entropy = hf.hf_completion_logprobs(model, ids, attn, n_prompt, 0.7)
    torch.manual_seed(0)
    enc = tokenizer([hf.chat_prompt_text(tokenizer, q) for q in questions], return_tensors="pt", padding=True)
    cfg = GenerationConfig(do_sample=True, temperature=0.7, top_k=0, top_p=1.0, max_new_tokens=10,
                           num_return_sequences=3, pad_token_id=0, eos_token_id=1)
    out = model.generate(**enc, generation_config=cfg, output_logits=True, return_dict_in_generate=True)
    assert torch.equal(out.sequences, ids) and len(texts) == 6
    sampler = torch.log_softmax(torch.stack(out.logits, 1) / 0.7, -1)
    sampler = sampler.gather(-1, ids[:, n_prompt:, None])[..., 0]
    assert (logp - sampler).abs()[mask].max() < 1e-5
    assert ((entropy >= 0) & (entropy <= math.log(model.config.vocab_size) + 1e-5)).all()


def test_completion_mask_stops_after_the_first_eos():
    class Fixed:
        device = "cpu"

        def generate(self, input_ids, attention_mask, generation_config):
            completions = torch.tensor([[5, 6, 1, 0], [5, 1, 0, 0], [7, 8, 9, 10]])
            return torch.cat([input_ids.repeat_interleave(3, 0), completions], 1)

    _, tokenizer = tiny_causal_lm()
    ids, attn, mask, n_prompt, texts = hf.generate_groups(Fixed(), tokenizer, ["q"], 3, 1.0, 4)
    assert mask.tolist() == [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    assert attn[:, n_prompt:].tolist() == mask.long().tolist()


def test_it_says_when_it_needs_the_network_or_a_gpu(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="needs the network"):
        hf.load_model("Qwen/Qwen2.5-0.5B-Instruct", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no GPU found"):
        hf.pick_device("auto")
    assert hf.pick_device("cpu") == "cpu"
    with pytest.raises(FileNotFoundError, match="needs the network"):
        cli.load_questions("hf")
    with pytest.raises(FileNotFoundError, match="GSM8K is not on this machine"):
        cli.load_questions("no/such/dir")


def test_a_name_that_is_no_model_fails_at_once_offline_or_not(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)   # a network would be tried for a hub id
    for name in ("nope", "a/b/c", ""):
        with pytest.raises(ValueError, match="name must be a name in GGUF_MODELS"):
            hf.load_model(name, "cpu")


def test_bad_config(tiny):
    for changes, message in ((dict(lr=0.0), "lr"), (dict(lr=-1e-6), "lr"), (dict(lr=float("nan")), "lr"),
                             (dict(G=1), "G must be an int >= 2"), (dict(reuse=0), "reuse"),
                             (dict(temperature=0.0), "temperature .* got 0.0"),
                             (dict(max_new_tokens=0), "max_new_tokens .* got 0"),
                             (dict(eps_low=1.2), "eps_low .* got 1.2"),
                             (dict(eps_high=float("nan")), "eps_high .* got nan"),
                             (dict(beta=-0.04), "beta .* got -0.04"),
                             (dict(aggregation="mean"), "aggregation")):
        with pytest.raises(ValueError, match=message):
            cli.train_gsm8k(small_config(tiny, **changes), verifier=digits)


def test_command_line_no_flags_gives_the_config_defaults():
    assert cli.parse_args([]) == hf.HFConfig()


def test_explicit_flags_win_over_the_preset():
    dapo = cli.parse_args(["--preset", "dapo", "--beta", "0.01"])
    assert dapo.beta == 0.01                                  # the flag, not the preset's 0.0
    assert dapo == hf.HFConfig(**{**OPT["dapo"], "beta": 0.01})   # the rest is the preset's
    # the order on the command line does not matter, and a flag equal to the default still counts
    assert cli.parse_args(["--beta", "0.01", "--preset", "dapo"]) == dapo
    assert cli.parse_args(["--preset", "dapo", "--eps_high", "0.2"]).eps_high == 0.2
    assert cli.parse_args(["--preset", "dapo", "--aggregation", "sequence"]).aggregation == "sequence"
    assert cli.parse_args(["--preset", "dapo", "--eps_high", "none"]).eps_high is None
    assert cli.parse_args(["--preset", "dapo", "--G", "8"]).G == 8


@pytest.mark.parametrize("text, value", [("true", True), ("True", True), ("1", True), ("yes", True),
                                         ("false", False), ("FALSE", False), ("0", False), ("no", False)])
def test_booleans_parse_strictly(text, value):
    assert cli.parse_args(["--kl_ratio", text]).kl_ratio is value
    assert cli.parse_args(["--clip", text]).clip is value


@pytest.mark.parametrize("argv", [["--kl_ratio", "ture"], ["--clip", "off"], ["--clip", ""],
                                  ["--eps_high", "nan-ish"], ["--preset", "ppo"]])
def test_bad_flags_are_argparse_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse_args(argv)
    assert e.value.code == 2
    assert f"argument {argv[0]}" in capsys.readouterr().err


class EosBiased(torch.nn.Module):
    """The tiny model with its end-of-sequence logit raised, so completions end at varied lengths."""

    def __init__(self, model, eos_id, bias):
        super().__init__()
        self.model, self.config, self.eos_id, self.bias = model, model.config, eos_id, bias

    def forward(self, **inputs):
        out = self.model(**inputs)
        out.logits[..., self.eos_id] += self.bias
        return out


def fast_path_inputs(tiny):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(tiny / "model").eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny / "model")
    questions = ["What is 2 + 3?", "Ava has 12 apples and gives 5 away. How many are left?", "7 * 8?"]
    prompt_ids, prompt_mask = hf.encode_prompts(tokenizer, questions)
    return model, tokenizer, prompt_ids, prompt_mask


def test_sampler_logprobs_are_a_forward_pass_at_the_temperature_and_rows_stop_at_eos(tiny):
    """sample_completions' log-probs equal a recomputed forward pass (full and shared-prompt) at T,
    and each row stops at its first eos, even as finished rows leave the batch."""
    model, tokenizer, prompt_ids, prompt_mask = fast_path_inputs(tiny)
    biased = EosBiased(model, tokenizer.eos_token_id, 2.5)
    G, T, new = 4, 0.7, 20
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    tokens, logp, mask = hf.sample_completions(biased, prompt_ids, prompt_mask, Sampling(G, new, T), eos, pad,
                                               torch.Generator().manual_seed(0))
    lengths = mask.sum(1)
    assert tokens.shape == logp.shape == mask.shape == (3 * G, int(lengths.max()))
    assert len(set(lengths.tolist())) >= 3                 # rows ended at different steps
    for row, n in zip(tokens, lengths.tolist()):
        ended = (row[:n] == eos).nonzero().flatten().tolist()
        assert ended in ([n - 1], []) and (n == new or ended)   # the eos is the last masked token
        assert (row[n:] == pad).all()
    assert (logp[~mask] == 0).all() and (logp[mask] < 0).all()
    with torch.no_grad():
        shared, _ = hf.group_logprobs(biased, prompt_ids, prompt_mask, tokens, T)
        ids = torch.cat([prompt_ids.repeat_interleave(G, 0), tokens], 1)
        attn = torch.cat([prompt_mask.repeat_interleave(G, 0), mask.long()], 1)
        full, _ = hf.hf_completion_logprobs(biased, ids, attn, prompt_ids.shape[1], T)
    assert (logp - full).abs()[mask].max() < 1e-5 and (shared - full).abs()[mask].max() < 1e-5
    again = hf.sample_completions(biased, prompt_ids, prompt_mask, Sampling(G, new, T), eos, pad,
                                  torch.Generator().manual_seed(0))
    assert torch.equal(again[0], tokens)                   # a seeded generator repeats the draw


def test_shared_prompt_logprobs_have_the_full_forward_gradient(tiny):
    """group_logprobs reads each prompt once, yet its gradient is that of G full sequences."""
    model, tokenizer, prompt_ids, prompt_mask = fast_path_inputs(tiny)
    G = 3
    tokens, _, mask = hf.sample_completions(model, prompt_ids, prompt_mask, Sampling(G, 8, 1.0),
                                            tokenizer.eos_token_id, tokenizer.pad_token_id,
                                            torch.Generator().manual_seed(1))
    ids = torch.cat([prompt_ids.repeat_interleave(G, 0), tokens], 1)
    attn = torch.cat([prompt_mask.repeat_interleave(G, 0), mask.long()], 1)
    grads = []
    for read in (lambda: hf.group_logprobs(model, prompt_ids, prompt_mask, tokens, 0.8),
                 lambda: hf.hf_completion_logprobs(model, ids, attn, prompt_ids.shape[1], 0.8)):
        model.zero_grad()
        logp, entropy = read()
        ((logp + 0.1 * entropy) * mask).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert grads[0].abs().max() > 0
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6)


def test_sampler_bad_input(tiny):
    model, tokenizer, prompt_ids, prompt_mask = fast_path_inputs(tiny)
    two = Sampling(2, 4, 1.0)
    for args, message in (((prompt_ids, prompt_mask[:, 1:], two), "prompt ids and mask"),
                          ((prompt_ids, prompt_mask, {"n": 2}), "sampling must be a Sampling"),
                          ((prompt_ids, prompt_mask, Sampling(2, 4, top_p=0.9)), "top_p 1"),
                          ((prompt_ids, prompt_mask, Sampling(2, 4, greedy=True)), "not greedy")):
        with pytest.raises(ValueError, match=message):
            hf.sample_completions(model, *args, eos_id=tokenizer.eos_token_id)
    with pytest.raises(ValueError, match="tokens must be"):
        hf.group_logprobs(model, prompt_ids, prompt_mask, torch.zeros(4, 5, dtype=torch.long), 1.0)


def test_sampler_refuses_right_padded_prompts_and_boolean_temperatures(tiny):
    model, tokenizer, prompt_ids, prompt_mask = fast_path_inputs(tiny)
    assert (prompt_mask == 0).any()                           # the fixture's prompts are padded
    tokenizer.padding_side = "right"
    texts = [hf.chat_prompt_text(tokenizer, q) for q in ["What is 2 + 3?", "Ava has 12 apples. How many?"]]
    enc = tokenizer(texts, return_tensors="pt", padding=True)
    tokenizer.padding_side = "left"
    for ids, mask in ((enc.input_ids, enc.attention_mask), (prompt_ids, prompt_mask.flip(1))):
        with pytest.raises(ValueError, match="not left-padded"):
            hf.sample_completions(model, ids, mask, Sampling(2, 4, 1.0), eos_id=tokenizer.eos_token_id)
        with pytest.raises(ValueError, match="not left-padded"):
            hf.group_logprobs(model, ids, mask, torch.zeros(2 * len(ids), 3, dtype=torch.long), 1.0)
    with pytest.raises(ValueError, match="got True"):
        Sampling(2, 4, True)
    runs = [hf.sample_completions(model, prompt_ids, prompt_mask, Sampling(2, 4, t),
                                  eos_id=tokenizer.eos_token_id, generator=torch.Generator().manual_seed(0))
            for t in (np.float32(0.5), 0.5)]
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def test_per_completion_reward_scores_each_completion_alone():
    reward = hf.per_completion_reward(lambda text, answer: text == answer)
    assert reward(["1", "2", "3"], ["1", "3", "3"], [True, False, True]) == [1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="2 texts, 1 answers"):
        reward(["1", "2"], ["1"], [True, True])
    with pytest.raises(ValueError, match="verifier must be callable"):
        hf.per_completion_reward("digits")


def test_grpo_step_needs_one_answer_per_question(tiny):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(tiny / "model")
    tokenizer = AutoTokenizer.from_pretrained(tiny / "model")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    cfg = small_config(tiny)
    with pytest.raises(ValueError, match="2 questions, 1 answers"):
        hf.grpo_step(model, None, tokenizer, optimizer, ["1 + 1?", "2 + 2?"], ["#### 2"], cfg,
                     hf.per_completion_reward(digits))
    with pytest.raises(ValueError, match="reference answer"):      # chapter 7's verifier: readable refs
        hf.grpo_step(model, None, tokenizer, optimizer, ["1 + 1?"], ["#### two"], cfg)


def test_a_batch_reward_replaces_the_verifier_and_sees_which_completions_ended(tiny):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(tiny / "model")
    tokenizer = AutoTokenizer.from_pretrained(tiny / "model")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    cfg = small_config(tiny, beta=0.0)                   # no reference model
    seen = []

    def reward(texts, answers, finished):
        seen.append((texts, answers, finished))
        return [float(f) for f in finished]
    torch.manual_seed(0)
    stats = hf.grpo_step(model, None, tokenizer, optimizer, ["1 + 1?", "2 + 2?"], ["two", "four"], cfg,
                         reward=reward)                  # unreadable references: no verifier runs
    texts, answers, finished = seen[0]
    assert len(texts) == len(finished) == 2 * cfg.G and answers == ["two"] * cfg.G + ["four"] * cfg.G
    assert stats["reward_mean"] == pytest.approx(sum(finished) / len(finished))


def test_the_prompt_can_be_the_question_alone(tiny):
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(tiny / "model")
    assert hf.INSTRUCTION in hf.chat_prompt_text(tokenizer, "1 + 1?")
    assert hf.chat_prompt_text(tokenizer, "1 + 1?", "") == "Question: 1 + 1?\nAnswer:"
