"""Apply .ci/determinism.env, so a bare `pytest` pins what `make test` pins."""
import os
from pathlib import Path

for line in (Path(__file__).resolve().parents[1] / ".ci" / "determinism.env").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        key, value = line.split("=", 1)
        os.environ[key] = value
os.environ.setdefault("MPLBACKEND", "Agg")   # unit tests draw off-screen


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_lm():
    """A 1-layer GPT after 40 steps of SFT on 300 generated problems (so that it ends its answers),
    with its tokenizer and splits: ``(train, test, tok, model)``, the model in eval mode. Shared by
    the tests that hold a GRPO loop to a reference (copy it before training)."""
    import torch

    from grpo.lm.data import make_splits
    from grpo.lm.model import GPT, GPTConfig
    from grpo.lm.tokenizer import Tokenizer
    from grpo.lm.train import SFTConfig, sft
    train, test = make_splits(300, 10, seed=0)
    tok = Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], 300)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=192))
    sft(model, tok, train, train[:2], SFTConfig(steps=40, batch_size=16, lr=1e-2, warmup=2,
                                                eval_every=10_000))
    return train, test, tok, model.eval()
