"""The book's GRPO recipe for a Hugging Face model as TRL's ``GRPOConfig`` and ``GRPOTrainer``: the
path for runs that outgrow one machine (``accelerate launch`` on several GPUs).

``trl_grpo_settings`` writes an ``HFConfig`` (the settings of ``grpo.lm.hf.train_hf_grpo``, the
book's own loop on a Hugging Face model) in ``GRPOConfig``'s names, every setting that changes what
is trained, so none is left to TRL's defaults, which are not the book's: TRL 1.16 defaults to a
learning rate of 1e-6 decaying linearly to 0, DAPO's token-level loss, beta 0 and a KL weighted by
the ratio. ``trl_grpo_trainer`` builds the trainer on them, in float32. Chapter 11's YAML
(``grpo.experiments.ch11_pretrained.trl_launch``) is this mapping of its recipe; the tests check
that the two agree and run one step of the trainer offline.

What still differs from ``grpo.lm.hf.grpo_step``: TRL's z-scored advantages divide by the unbiased
std plus 1e-4 (the book's by the population std plus 1e-8; ``advantage="trl"`` is TRL's), and TRL
samples with ``generate``, each prompt repeated G times, so the same seed draws other completions.
"""
from __future__ import annotations

from grpo.lm.hf import HFConfig
from grpo.lm.rl import HF_ADAM_BETAS

# TRL's loss_type for each of the book's aggregations, and its scale_rewards for each advantage
LOSS_TYPES = {"sequence": "grpo", "token": "dapo", "constant": "dr_grpo"}
SCALE_REWARDS = {"zscore": "group", "trl": "group", "center": "none"}


def trl_grpo_settings(cfg: HFConfig) -> dict:
    """``cfg`` in ``GRPOConfig``'s names, for one process (on N processes, divide
    ``per_device_train_batch_size`` by N to keep the batch). Refuses what TRL cannot run: no clip,
    and the "rloo" and "raw" advantages."""
    if not isinstance(cfg, HFConfig):
        raise ValueError(f"cfg must be an HFConfig, got {type(cfg).__name__}")
    if not cfg.clip:
        raise ValueError("cfg.clip must be True: TRL's GRPOTrainer always clips the ratio")
    if cfg.advantage not in SCALE_REWARDS:
        raise ValueError(f"cfg.advantage must be one of {tuple(SCALE_REWARDS)} to run in TRL, "
                         f"got {cfg.advantage!r}")
    return dict(
        # the batch: prompts x G completions, one optimizer step per generated batch, reused K times
        per_device_train_batch_size=cfg.prompts * cfg.G,
        num_generations=cfg.G,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=cfg.reuse,           # K: at 1 every ratio is 1, and the clip never acts
        max_steps=cfg.steps,
        # sampling: pure sampling at the temperature; answers cut at the budget stay in the loss
        temperature=cfg.temperature,
        top_k=0,
        top_p=1.0,
        max_completion_length=cfg.max_new_tokens,
        mask_truncated_completions=False,
        # the loss
        loss_type=LOSS_TYPES[cfg.aggregation],
        scale_rewards=SCALE_REWARDS[cfg.advantage],
        epsilon=cfg.eps_low,
        epsilon_high=cfg.eps_low if cfg.eps_high is None else cfg.eps_high,
        beta=cfg.beta,
        use_bias_correction_kl=cfg.kl_ratio,
        importance_sampling_level=cfg.ratio_level,
        # the optimizer: Adam at a constant rate, no weight decay, no gradient clipping
        learning_rate=cfg.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        adam_beta1=HF_ADAM_BETAS[0],
        adam_beta2=HF_ADAM_BETAS[1],
        adam_epsilon=1e-8,
        max_grad_norm=0.0,
        seed=cfg.seed,
    )


def trl_grpo_trainer(model, tokenizer, dataset, reward, cfg: HFConfig, output_dir: str, **extra):
    """TRL's ``GRPOTrainer`` on ``cfg``'s recipe (``trl_grpo_settings``), in float32, logging every
    step. ``model``: a hub id or a local directory (TRL loads the reference model from it;
    ``grpo.lm.hf.save_plain`` writes one); ``dataset``: a ``prompt`` column and the columns
    ``reward`` reads (``grpo.lm.hf.trl_dataset``); ``reward``: one TRL reward function
    (``grpo.lm.hf.trl_reward``). ``extra``: TRL settings the recipe leaves open (``bf16=True`` on
    a GPU, ``report_to``, ``save_strategy``); one that the recipe sets is refused."""
    import trl

    if not callable(reward):
        raise ValueError(f"reward must be one reward function, got {type(reward).__name__}: TRL "
                         "trains on the weighted sum of a list, so a control reward is its own run")
    settings = trl_grpo_settings(cfg)
    clash = sorted(set(settings) & set(extra))
    if clash:
        raise ValueError(f"extra must not set {', '.join(clash)}: the recipe sets it from cfg")
    args = trl.GRPOConfig(output_dir=output_dir, **settings,
                          **{"bf16": False, "logging_steps": 1, **extra})
    return trl.GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                           processing_class=tokenizer)
