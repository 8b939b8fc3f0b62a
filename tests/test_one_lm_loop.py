"""One GRPO loop for language models (``grpo.lm.rl``): our GPT's ``train_lm_grpo``, the Hugging Face
path (``grpo.lm.hf.grpo_step``), the benches and chapter 8's printed live loop take the same step,
``grpo_iteration``, or are held equal to it here; one set of optimizer settings (``lm_adam``)."""
import ast
import copy
import itertools
import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from grpo.lm import rl
from grpo.lm.eval import EvalConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
CHAPTER_8 = REPO / "chapters" / "08_grpo_math.ipynb"


@pytest.fixture(scope="module")
def tiny(tiny_lm):                     # tests/conftest.py: a 1-layer GPT after 40 SFT steps
    train, test, tok, model = tiny_lm
    return model, tok, train, test


def _by_hand(model, tok, train, cfg):
    """``cfg.iterations`` of GRPO written out as chapter 8 prints it: the sampler, the reference's
    log-probs, ``grpo_update``; each iteration's stats and the final weights."""
    from grpo.lm.grpo import grpo_update
    from grpo.lm.model import DTYPE, completion_logprobs
    policy, ref = copy.deepcopy(model), copy.deepcopy(model).eval()
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=(0.9, 0.99))
    rng, gen = random.Random(cfg.seed), torch.Generator().manual_seed(cfg.seed)
    rows = []
    for it in range(1, cfg.iterations + 1):
        optimizer.param_groups[0]["lr"] = cfg.lr * min(1.0, it / cfg.warmup)
        policy.eval()
        groups = rl.sample_groups(policy, tok, rng.sample(train, cfg.prompts), cfg, gen, None)
        prompts = [g.prompt for g in groups]
        tokens = torch.cat([g.tokens for g in groups])
        mask = torch.cat([g.mask for g in groups])
        with torch.no_grad():
            logp_ref = completion_logprobs(ref, prompts, cfg.G, tokens, mask, cfg.temperature)
        policy.train()
        rows.append(grpo_update(
            lambda r: completion_logprobs(policy, prompts[r.start // cfg.G:r.stop // cfg.G], cfg.G,
                                          tokens[r], mask[r], cfg.temperature, entropy=True),
            optimizer, mask.to(DTYPE), torch.stack([g.rewards for g in groups]),
            logp_old=torch.cat([g.logp_old for g in groups]), logp_ref=logp_ref,
            max_grad_norm=cfg.grad_clip, max_tokens=cfg.max_new_tokens, **cfg.loss_options()))
    return rows, policy.state_dict()


def test_the_library_loop_is_grpo_written_out_to_the_last_bit(tiny):
    """``train_lm_grpo`` (through ``grpo_iteration``) against the loop written out by hand: the
    same stats and the same weights, bit for bit (the runs in data/runs/ replay through it)."""
    model, tok, train, test = tiny
    cfg = rl.RunConfig(iterations=3, prompts=3, G=4, max_new_tokens=12, warmup=2, beta=0.1,
                       evaluation=EvalConfig(every=10, problems=2, samples=1, at_start=False))
    run = rl.train_lm_grpo(copy.deepcopy(model), tok, train, test, cfg)
    rows, state = _by_hand(model, tok, train, cfg)
    for key in ("reward_mean", "kl_mean", "clip_fraction", "entropy_mean",
                "completion_length_mean"):
        assert run["log"][key] == [r[key] for r in rows], key
    assert all(torch.equal(run["state"][k], v) for k, v in state.items())


def test_every_lm_loop_steps_with_one_adam():
    """The optimizer's settings are stated once: every Adam a GRPO loop on a language model builds
    comes from ``rl.lm_adam`` (the lib, the benches), with our GPT's betas or, for chapter 11's
    stored Hugging Face runs, PyTorch's (``HF_ADAM_BETAS``)."""
    assert rl.ADAM_BETAS == (0.9, 0.99) and rl.HF_ADAM_BETAS == (0.9, 0.999)
    opt = rl.lm_adam([torch.nn.Parameter(torch.zeros(1))], 1e-3)
    assert opt.defaults["betas"] == rl.ADAM_BETAS and opt.defaults["weight_decay"] == 0
    sources = {p: p.read_text() for p in [REPO / "lib/grpo/lm/rl.py", REPO / "lib/grpo/lm/hf.py",
                                           REPO / "bench/bench_grpo_math.py"]}
    for path, text in sources.items():
        calls = [ast.unparse(n.func) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)]
        adams = [c for c in calls if c.endswith("optim.Adam")]
        assert adams == (["torch.optim.Adam"] if path.name == "rl.py" else []), (path, adams)
    assert "grpo_iteration(" in sources[REPO / "lib/grpo/lm/hf.py"]
    assert sources[REPO / "bench/bench_grpo_math.py"].count("grpo_iteration(") == 1


def test_the_hugging_face_step_is_the_librarys_iteration(monkeypatch):
    """``hf.grpo_step`` takes ``rl.grpo_iteration``'s step with the Hugging Face sampler and
    log-probs: planted in its place, a recording stand-in sees every call."""
    pytest.importorskip("transformers")
    import sys
    sys.path.insert(0, str(REPO / "tests"))
    from hf_stand_in import tiny_causal_lm
    from grpo.lm import hf
    model, tokenizer = tiny_causal_lm(seed=0)
    cfg = hf.HFConfig(model="x", prompts=1, G=2, max_new_tokens=4, device="cpu", chunk_groups=1)
    seen = []
    real = rl.grpo_iteration

    def recording(*args, **kwargs):
        seen.append((args[4], kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(hf, "grpo_iteration", recording)
    optimizer = rl.lm_adam(model.parameters(), 1e-3, rl.HF_ADAM_BETAS)
    stats = hf.grpo_step(model, copy.deepcopy(model), tokenizer, optimizer, ["1+1?"], ["#### 2"],
                         cfg, hf.per_completion_reward(lambda text, answer: 0.0),
                         generator=torch.Generator().manual_seed(0))
    assert seen == [(hf.hf_batch_logprobs, {"chunk_groups": 1})]
    assert {"sample_cpu_s", "ref_cpu_s", "update_cpu_s", "sampled_tokens"} <= set(stats)


def _chapter_8_cells():
    cells = json.loads(CHAPTER_8.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    setup = ["".join(c["source"]) for c in code if "load_sft()" in "".join(c["source"])
             and "remove-cell" in c["metadata"].get("tags", [])]
    live = ["".join(c["source"]) for c in code if "live-run" in c["metadata"].get("tags", [])]
    assert len(setup) == 1 and len(live) == 1, (len(setup), len(live))
    return setup[0], live[0]


def test_chapter_8_prints_the_librarys_loop():
    """Chapter 8's live run, the loop it prints, takes the library's steps: its first two
    iterations, run here from the chapter's own cells, log what ``train_lm_grpo``'s log."""
    setup, live = _chapter_8_cells()
    namespace: dict = {}
    exec(compile(setup, "chapter 8, setup", "exec"), namespace)
    from grpo.experiments.ch08_grpo_math import main_runs
    namespace["MAIN"] = main_runs.MAIN                  # the chapter's main recipe (its cell 17)
    namespace["progress"] = lambda steps, desc="": itertools.islice(steps, 2)
    namespace["print"] = lambda *a, **k: None
    exec(compile(live, "chapter 8, live run", "exec"), namespace)
    LIVE, logged = namespace["LIVE"], namespace["live"]
    short = replace(LIVE, iterations=2, evaluation=replace(
        LIVE.evaluation, problems=1, samples=1, final_samples=0, held_out=0, at_start=False))
    lib = rl.train_lm_grpo(copy.deepcopy(namespace["sft_model"]), namespace["tok"],
                           namespace["train"], namespace["test"], short)["log"]
    assert lib["reward_mean"] == logged["reward"][:2]
    assert lib["degenerate_fraction"] == logged["degenerate"][:2]
    assert lib["kl_mean"] == pytest.approx(logged["kl"][:2], rel=1e-9, abs=1e-15)


def _code_cells(path: Path) -> list[str]:
    """A notebook's code cells, IPython magics and shell lines dropped."""
    cells = json.loads(path.read_text())["cells"]
    return ["\n".join(ln for ln in "".join(c["source"]).splitlines()
                      if not ln.lstrip().startswith(("%", "!")))
            for c in cells if c["cell_type"] == "code"]


def _looped_updates(source: str) -> list[int]:
    """Lines where ``source`` calls ``grpo_update`` inside a ``for`` or ``while`` loop: a GRPO loop
    written out rather than the library's ``grpo_iteration``."""
    lines = []
    for loop in ast.walk(ast.parse(source)):
        if isinstance(loop, (ast.For, ast.While)):
            lines += [n.lineno for n in ast.walk(loop) if isinstance(n, ast.Call)
                      and ast.unparse(n.func).split(".")[-1] == "grpo_update"]
    return lines


def _adams(source: str) -> list[str]:
    return [ast.unparse(n.func) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
            and ast.unparse(n.func).split(".")[-1] in ("Adam", "AdamW")]


PAGES = sorted([*REPO.glob("chapters/[0-9][0-9]_*.ipynb"), *REPO.glob("book/*.ipynb")])


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_page_writes_a_grpo_loop_or_builds_an_adam(path):
    """Every page that trains GRPO on a language model steps through ``rl.grpo_iteration`` (held
    equal to a loop written out, above), and takes its Adam from ``rl.lm_adam``."""
    for source in _code_cells(path):
        assert _looped_updates(source) == [], path.name
        assert _adams(source) == [], path.name


def test_the_page_check_catches_a_written_out_loop_and_an_adam():
    loop = ("for it in range(3):\n    batch = draw()\n"
            "    grpo_update(lp, optimizer, mask, rewards)\n")
    assert _looped_updates(loop) == [3]
    assert _looped_updates("stats = grpo_update(lp, optimizer, mask, rewards)\n") == []  # one step
    assert _adams("opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n") == ["torch.optim.Adam"]
    assert _adams("opt = rl.lm_adam(model.parameters(), 1e-3)\n") == []


def test_the_library_builds_adam_only_in_lm_adam():
    """``grep`` for Adam in the library finds ``lm_adam`` and the two documented AdamW of SFT and
    expert iteration (weight decay on the matrices); no literal betas outside ``rl.py``."""
    found = {}
    for path in sorted((REPO / "lib" / "grpo").rglob("*.py")):
        text = path.read_text()
        torch_adams = [c for c in _adams(text) if "optim." in c]   # not the lander's NumPy Adam
        if torch_adams:
            found[path.relative_to(REPO / "lib" / "grpo").as_posix()] = torch_adams
        if path.name != "rl.py":
            assert "(0.9, 0.99)" not in text and "(0.9, 0.999)" not in text.replace(
                "betas=(0.9, 0.999)):", ""), path          # mlp.py's own NumPy Adam keeps its default
    assert found == {"lm/rl.py": ["torch.optim.Adam", "torch.optim.AdamW"],
                     "lm/train.py": ["torch.optim.AdamW"]}, found
