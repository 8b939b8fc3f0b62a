"""When TRL 1.16's importance ratio can differ from 1, and so when its clip can act: only when one generated
batch serves more than one optimizer step (chapter 12's rows for num_iterations, epsilon, epsilon_high).

In trl/trainer/grpo_config.py, ``GRPOConfig.__post_init__`` sets ``steps_per_generation`` to
``gradient_accumulation_steps`` when neither it nor ``generation_batch_size`` is given, and
``generation_batch_size`` to ``per_device_train_batch_size x processes x steps_per_generation``. In
trl/trainer/grpo_trainer.py, ``_prepare_inputs`` generates once every
``steps_per_generation x num_iterations`` micro-batches; ``_generate_and_score_completions`` computes
the old log-probs only when ``gradient_accumulation_steps`` is not a multiple of that number; and
``_compute_loss`` otherwise takes the current log-probs, detached, as the old ones, so every ratio is
exactly 1. With the defaults (``gradient_accumulation_steps=1``, ``num_iterations=1``) that is every step.

The config tests need no model. The runs take one or two optimizer steps on the offline stand-in model, with
the clip's band set to 1e-4 so that any ratio that moved leaves it, and read TRL's own logged
``clip_ratio/region_mean`` beside the ratios its loss saw.
"""
import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")

from hf_stand_in import saved_tiny_causal_lm  # noqa: E402

torch.set_num_threads(1)
G, PER_DEVICE = 4, 8
PROMPTS = [{"prompt": f"Question: {a} + {b} = ?\nAnswer:"} for a, b in [(2, 3), (4, 5), (1, 1), (7, 2),
                                                                       (3, 3), (6, 1), (8, 4), (5, 9)]]


def config(tmp_path, **settings):
    return trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=PER_DEVICE, num_generations=G,
                          max_completion_length=8, learning_rate=1e-3, beta=0.0, epsilon=1e-4, use_cpu=True,
                          bf16=False, save_strategy="no", logging_steps=1, seed=0, disable_tqdm=True,
                          **settings)


def test_grpo_config_defaults_in_the_pinned_trl():
    """The defaults the book quotes (chapter 12 reads them from the package; this pins them to TRL 1.16)."""
    defaults = {f.name: f.default for f in dataclasses.fields(trl.GRPOConfig)}
    assert trl.__version__ == "1.16.0"
    quoted = {"loss_type": "dapo", "beta": 0.0, "scale_rewards": "group", "num_iterations": 1,
              "steps_per_generation": None, "generation_batch_size": None, "gradient_accumulation_steps": 1,
              "epsilon": 0.2, "epsilon_high": None, "importance_sampling_level": "token",
              "reward_weights": None, "multi_objective_aggregation": "sum_then_normalize",
              "num_generations": 8, "max_completion_length": 512, "temperature": 1.0,
              "learning_rate": 1e-6, "lr_scheduler_type": "linear", "mask_truncated_completions": False,
              "use_bias_correction_kl": True}
    assert {k: defaults[k] for k in quoted} == quoted


def test_steps_per_generation_defaults_to_gradient_accumulation_steps(tmp_path):
    plain = config(tmp_path)
    assert (plain.gradient_accumulation_steps, plain.steps_per_generation, plain.num_iterations) == (1, 1, 1)
    assert plain.generation_batch_size == PER_DEVICE                  # one process
    accumulated = config(tmp_path, gradient_accumulation_steps=4)
    assert accumulated.steps_per_generation == 4 and accumulated.generation_batch_size == 4 * PER_DEVICE
    ahead = config(tmp_path, steps_per_generation=3)
    assert ahead.gradient_accumulation_steps == 1 and ahead.generation_batch_size == 3 * PER_DEVICE
    by_size = config(tmp_path, generation_batch_size=3 * PER_DEVICE)
    assert by_size.steps_per_generation == 3
    with pytest.raises(ValueError, match="can not be both configured"):
        config(tmp_path, steps_per_generation=2, generation_batch_size=2 * PER_DEVICE)


def reused(gradient_accumulation_steps, steps_per_generation, num_iterations) -> bool:
    """TRL 1.16's test for computing the old log-probs (trl/trainer/grpo_trainer.py,
    _generate_and_score_completions): a generated batch spans an optimizer step. Checked against TRL below."""
    return gradient_accumulation_steps % (steps_per_generation * num_iterations) != 0


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_lm")
    return directory, saved_tiny_causal_lm(directory)


def digits(completions, **_):
    """A reward with contrast on a random model: the number of digits in the answer."""
    return [float(sum(ch.isdigit() for ch in c)) for c in completions]


def ratios_seen(trainer) -> list:
    """Wrap TRL's ``_compute_loss`` to record, per micro-batch, the largest |log pi_theta - log pi_old| its
    loss saw over completion tokens; None where TRL had no old log-probs and so used log pi_theta itself."""
    seen = []
    compute_loss, logps = trainer._compute_loss, trainer._get_per_token_logps_and_entropies

    def spied(model, inputs):
        current = []

        def capture(*args, **kwargs):
            out = logps(*args, **kwargs)
            current.append(out[0].detach())
            return out
        trainer._get_per_token_logps_and_entropies = capture
        try:
            loss = compute_loss(model, inputs)
        finally:
            trainer._get_per_token_logps_and_entropies = logps
        old, mask = inputs.get("old_per_token_logps"), inputs["completion_mask"].bool()
        seen.append(None if old is None else (current[0] - old)[mask].abs().max().item())
        return loss
    trainer._compute_loss = spied
    return seen


# (gradient_accumulation_steps, steps_per_generation (None: TRL's default), num_iterations, optimizer steps)
CASES = {"TRL's defaults": (1, None, 1, 2),
         "two micro-batches, one step": (2, None, 1, 1),
         "num_iterations=2": (1, None, 2, 2),
         "steps_per_generation=2": (1, 2, 1, 2),
         "steps_per_generation=4, accumulation 2": (2, 4, 1, 2)}


@pytest.mark.parametrize("case", CASES)
def test_the_ratio_leaves_1_only_when_a_generation_outlives_an_optimizer_step(model_dir, tmp_path, case):
    accumulation, per_generation, iterations, steps = CASES[case]
    directory, tokenizer = model_dir
    settings = {"steps_per_generation": per_generation} if per_generation else {}
    args = config(tmp_path, gradient_accumulation_steps=accumulation, num_iterations=iterations,
                  max_steps=steps, **settings)
    trainer = trl.GRPOTrainer(model=str(directory), reward_funcs=digits, args=args,
                              train_dataset=datasets.Dataset.from_list(PROMPTS), processing_class=tokenizer)
    seen = ratios_seen(trainer)
    trainer.train()
    assert len(seen) == steps * accumulation                            # micro-batches
    spg = trainer.args.steps_per_generation
    clip = [h["clip_ratio/region_mean"] for h in trainer.state.log_history if "clip_ratio/region_mean" in h]
    assert len(clip) == steps
    if not reused(accumulation, spg, iterations):
        assert seen == [None] * len(seen)                               # the ratio is 1 by construction
        assert clip == [0.0] * steps                                    # so even a 1e-4 band never clips
        return
    # the old log-probs were taken at generation: the ratio is 1 (to float precision) until the first
    # optimizer step after it, then moves, and the clip acts on those micro-batches alone
    per_step = [seen[i:i + accumulation] for i in range(0, len(seen), accumulation)]
    assert all(d is not None for d in seen)
    assert max(per_step[0]) < 1e-5 and clip[0] == 0.0
    assert min(per_step[1]) > 1e-3 and clip[1] > 0.5


def test_the_cases_cover_both_answers_of_trls_test():
    answers = {case: reused(a, p or a, k) for case, (a, p, k, _) in CASES.items()}
    assert answers == {"TRL's defaults": False, "two micro-batches, one step": False,
                       "num_iterations=2": True, "steps_per_generation=2": True,
                       "steps_per_generation=4, accumulation 2": True}
