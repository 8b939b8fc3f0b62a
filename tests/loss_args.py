"""``grpo_loss``'s arguments from one dict of keywords: the tests' tables of options hold a
``LossOptions``' fields and, beside them, ``max_tokens`` (aggregation="constant") or ``entropy``."""
from grpo.lm.grpo import LossOptions


def loss_args(keywords: dict) -> dict:
    """``{"options": LossOptions(...), "max_tokens": ..., "entropy": ...}`` for ``**``."""
    rest = dict(keywords)
    apart = {k: rest.pop(k) for k in ("max_tokens", "entropy") if k in rest}
    return {"options": LossOptions(**rest), **apart}
