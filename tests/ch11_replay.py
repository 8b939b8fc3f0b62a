"""The one replay check for chapter 11's stored runs: a run's first iterations, rerun from the model
file, give the stored completions exactly and the stored numbers to ``REPLAY_RTOL``."""
import torch

from grpo.book.results import mismatches
from grpo.experiments.ch11_pretrained.smollm2_runs import REPLAY_RTOL


def assert_replays(replay, name: str, n: int) -> None:
    """``replay(name, n=n)`` returns ``(stored, fresh)``; both must agree."""
    torch.set_num_threads(1)
    stored, fresh = replay(name, n=n)
    assert fresh["first_batch"]["texts"] == stored["first_batch"]["texts"], (
        "the sampled completions differ: if the code is unchanged, this CPU's float32 kernels round "
        "differently (README, 'Reproducibility')")
    assert mismatches(stored, fresh, rtol=REPLAY_RTOL) == []
