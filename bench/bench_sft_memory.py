"""Peak memory of chapter 7's stored SFT run (`make bench`): its set-up and 40 steps of its recipe,
with one evaluation, in a fresh process. Memory does not grow with steps (the history is a list
of floats), so this is the run's peak. Adds ``sft_run_peak_memory_mb`` to data/bench/07_small_lm.json,
which chapter 7 states beside its RETRAIN switch."""
import subprocess
import sys
from pathlib import Path

from benchfile import write_bench

OUT = Path(__file__).resolve().parent.parent / "data" / "bench" / "07_small_lm.json"

CHILD = """
import resource, torch
torch.set_num_threads(1)
from dataclasses import replace
from grpo.lm.data import PROTOCOL
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.model import GPT
from grpo.lm.train import sft
from grpo.experiments.ch07_small_lm import sft_run
train, test = PROTOCOL.splits()
tok = Tokenizer.train([p["question"] + "\\n" + p["answer"] for p in train], vocab_size=512)
torch.manual_seed(0)
model = GPT(sft_run.model_config(tok))
sft(model, tok, train, test, replace(sft_run.SFT, steps=40, eval_every=40))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main():
    kb = int(subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True,
                            text=True).stdout.split()[-1])
    write_bench(OUT, {"sft_run_peak_memory_mb": round(kb / 1024)}, merge=True, sort_keys=False)
    print(f"chapter 7's SFT run peaks at {kb / 1024:.0f} MB")


if __name__ == "__main__":
    main()
