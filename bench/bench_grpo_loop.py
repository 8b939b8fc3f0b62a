"""Where chapter 8's compute goes: one GRPO iteration split into sampling, the reference forward
pass and the update, against one SFT step; and how the split moves with G and model size. Side by
side, the same iteration of the loop as it stood at BASELINE (float32, each prompt's keys computed
G times, log-probs on the full padded sequences), run from that commit's lib in a subprocess.

All CPU seconds (time.process_time), one torch thread, fastest of 3 repetitions. Writes
data/bench/08_grpo_loop.json (`make bench`), which chapter 8 reads to size its continued-SFT control
(the same CPU time as one GRPO run) and to draw the compute split.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from grpo.lm.data import PROTOCOL
from grpo.lm.model import GPT, GPTConfig, Sampling, sample
from grpo.lm.rl import RunConfig
try:
    from grpo.lm.rl import train_lm_grpo
except ImportError:          # BASELINE's lib, which baseline_iteration imports this file under
    from grpo.lm.rl import train_grpo as train_lm_grpo
from grpo.lm.train import SFTConfig, sft
try:
    from grpo.lm.eval import EvalConfig
    NO_EVALUATION = {"evaluation": EvalConfig(every=10_000, problems=1, samples=1)}
except ImportError:          # BASELINE's lib, whose RunConfig held the evaluation settings itself
    NO_EVALUATION = {"eval_every": 10_000, "eval_problems": 1, "eval_samples": 1}
try:
    from grpo.runstore.models import load_sft
except ImportError:          # BASELINE's lib, where grpo.lm.train held it
    from grpo.lm.train import load_sft

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "bench" / "08_grpo_loop.json"
REPEATS = 3
BASELINE = "245f0dd"      # the loop before the float64 precision and the grouped forward passes
torch.set_num_threads(1)


def cpu(fn):
    best = float("inf")
    for _ in range(REPEATS):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


SPLIT = ("sample_cpu_s", "ref_cpu_s", "update_cpu_s")


def iteration_cpu_split(model, tok, train, test, **kw):
    """CPU seconds of sampling / reference / update in one iteration of the real loop (fastest of 3)."""
    cfg = RunConfig(iterations=REPEATS, **NO_EVALUATION, **kw)
    log = train_lm_grpo(model, tok, train, test, cfg)["log"]
    # BASELINE's lib logged the same CPU seconds as sample_s, ref_s, update_s
    return {k: round(min(log[k] if k in log else log[k.replace("_cpu_s", "_s")]), 3) for k in SPLIT}


def baseline_iteration(rev: str = BASELINE) -> dict | str:
    """The same ``iteration_cpu_split`` with the lib as it was at commit ``rev`` (from git, into a temp
    dir, run in a subprocess under this process's pins) on today's checkpoint, or why it could not
    run."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "lib"], capture_output=True)
        if archive.returncode != 0:
            return f"not measured: git archive {rev} failed ({archive.stderr.decode().strip()[:200]})"
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        (Path(tmp) / "data").symlink_to(ROOT / "data")       # the same model for both loops
        code = ("import sys, json; sys.path.insert(0, %r); import bench_grpo_loop as b; "
                "from grpo.lm.data import PROTOCOL; "
                "m, tok = b.load_sft(); tr, te = PROTOCOL.splits(); "
                "print(json.dumps(b.iteration_cpu_split(m, tok, tr, te)))") % str(Path(__file__).parent)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "lib")}
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            return f"not measured: {run.stderr.strip()[-300:]}"
        return json.loads(run.stdout.strip().splitlines()[-1])


def shape_split(cfg, rows=256, prompt=30, new=50):
    """The same three costs on a fixed shape (every row writes ``new`` tokens), for any model."""
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    prompts = torch.randint(2, cfg.vocab_size, (rows, prompt)).tolist()
    ids = torch.randint(2, cfg.vocab_size, (rows, prompt + new))
    opt = torch.optim.Adam(model.parameters(), lr=1e-6)

    def update():
        loss = torch.log_softmax(model(ids[:, :-1]), -1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    with torch.no_grad():
        out = {"sample_cpu_s": cpu(lambda: sample(model, prompts, Sampling(1, new, 0.7), eos_id=-1)),
               "ref_cpu_s": cpu(lambda: model(ids[:, :-1]))}
    out["update_cpu_s"] = cpu(update)
    out["n_params"] = sum(p.numel() for p in model.parameters())
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def main():
    from benchfile import write_bench      # here, not above: baseline_iteration imports this file
    model, tok = load_sft()                # under BASELINE's lib, which has no grpo.book
    train, test = PROTOCOL.splits()
    result = {"threads": 1, "repeats": REPEATS, "load_average_before": round(os.getloadavg()[0], 2),
              "torch": torch.__version__}
    # one iteration of chapter 8's main run (32 prompts x 8, beta 0.04), and G at 32 prompts
    result["grpo_iteration_cpu_s"] = iteration_cpu_split(load_sft()[0], tok, train, test)
    result["baseline"] = {"commit": BASELINE, "grpo_iteration_cpu_s": baseline_iteration()}
    if isinstance(result["baseline"]["grpo_iteration_cpu_s"], dict):
        result["baseline"]["speedup"] = round(sum(result["baseline"]["grpo_iteration_cpu_s"].values())
                                              / sum(result["grpo_iteration_cpu_s"].values()), 2)
    result["grpo_iteration_by_G"] = {G: iteration_cpu_split(load_sft()[0], tok, train, test, G=G)
                                     for G in (4, 8, 16)}
    # one step of chapter 7's SFT (batch 32), the continued-SFT control's unit of work
    # (two runs of 10 and 40 steps: their difference leaves out sft()'s one-off tokenising of the data)
    spent = {}
    for steps in (10, 40):
        cfg = SFTConfig(steps=steps, batch_size=32, lr=1e-4, warmup=1, eval_every=10_000, eval_problems=1)
        t = time.process_time()
        sft(load_sft()[0], tok, train, test, cfg)
        spent[steps] = time.process_time() - t
    result["sft_step_cpu_s"] = round((spent[40] - spent[10]) / 30, 4)
    # the split on a fixed shape (256 rows, 50 new tokens) for chapter 7's model and a larger one
    base = model.cfg
    result["split_by_model"] = {
        "chapter 7": shape_split(base),
        "2x deeper and 2x wider": shape_split(GPTConfig(vocab_size=base.vocab_size, n_layer=8, n_head=8,
                                                        d_model=256, max_len=base.max_len)),
    }
    write_bench(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
