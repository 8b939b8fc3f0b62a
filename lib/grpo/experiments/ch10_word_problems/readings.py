"""Chapter 10's readings of its stored long runs, computed once: the chapter (which writes its
results file from them, ``long_run_registry``) and its lab notes (which show them as tables) both
call ``read_long_runs``, so the two pages cannot drift apart or repeat each other's code.

``read_long_runs(runs, directory)`` takes the runs as a page loaded them (``long_runs.load_run``
for every name of ``long_runs.RUNS``, from ``directory``: the stored runs, or a re-run in scratch)
and returns a ``LongRunReadings``: the start's diagnostics, each suspect's lifts (the learning-rate
sweep, the reward that ignores the answer, longer SFT and GRPO after it, expert iteration and 0/1
advantages, practice), where the best rate's lift lands (by steps, by whether the calculation
chain was trained on), the strict reward and Dr. GRPO's length normaliser. Every lift is paired on
the same held-out problems (``long_runs.lift``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grpo.experiments.ch10_word_problems import long_runs as L
from grpo.lm.data import HELD_OUT, PROTOCOL, step_count
from grpo.lm.eval import lift_by_chain
from grpo.stats import Lift, holm, lift_gap, paired_lift

RANDOM, OUTCOME = "random_reward", "grpo_lr0.00015"   # the control and its verifier twin
LADDER = ("expert_iteration_lr3e-05", "expert_iteration_lr0.0001", "raw_advantage", OUTCOME)
PRACTICE = ("practice_grpo", "practice_sft", "practice_sft_epochs")


@dataclass(frozen=True)
class LongRunReadings:
    """What chapter 10 and its lab notes read from the stored runs (names are ``long_runs.RUNS``'
    keys; every ``Lift`` is held-out greedy unless its name says otherwise)."""
    runs: dict                  # name -> the stored run
    directory: Path | None      # where they were read from
    start: dict                 # held-out greedy and sampled; first batch reward, degenerate share
    entropy_per_token: float    # the sweep's first batches, mean
    completion_length: float
    sweep: tuple                # the sweep's names, by learning rate
    sweep_lift: dict            # name -> lift over the start, both seeds
    sweep_sampled: dict
    sweep_holm: dict            # name -> Holm-adjusted p over the three rates
    sweep_kl: list              # final KL to the start, by rate
    best: str                   # the rate chosen on validation
    random_lift: Lift
    outcome_lift: Lift
    signal: Lift                # verifier minus random, paired (same seed and prompts)
    long_sft: Lift              # more SFT over chapter 7's model
    long_sft_sampled: Lift
    long: tuple                 # GRPO runs from the longer SFT
    long_lrs: tuple             # those with the verifier's reward
    long_random: str
    long_paired: str            # the verifier run at the random reward's rate
    from_long: dict             # name -> lift over the longer SFT
    long_holm: dict             # verifier runs -> Holm-adjusted p over the three rates
    long_signal: Lift
    ladder_cpu: dict            # LADDER name -> its CPU over outcome GRPO's
    ladder_lift: dict           # LADDER name -> lift over the start
    vs_grpo: dict               # expert iteration and 0/1 advantages minus outcome GRPO
    practice_pool: dict         # PRACTICE name -> lift on its 64 practised problems
    practice_held: dict         # PRACTICE name -> lift on the held-out problems
    steps: np.ndarray           # each held-out problem's number of calculations
    by_step: dict               # 1..4 -> the best rate's lift on those problems
    interaction: Lift           # 1-2 steps minus 3-4 steps
    seen: np.ndarray            # whether a training problem has the problem's calculation chain
    by_chain: dict              # "new", "seen" -> lift, chains resampled
    chain_gap: Lift             # new minus seen
    strict_names: list
    strict: Lift                # strict reward minus outcome reward, paired by seed
    wrong_notes: dict           # name -> share of right samples with a wrong <<a=b>>
    length_names: list
    length_diff: Lift           # constant normaliser minus 1/|o_i|, paired by seed


def both(runs: dict, name: str) -> list:
    """A run and its second seed, when it has one."""
    return [name, name + "_seed1"] if name + "_seed1" in runs else [name]


def read_long_runs(runs: dict, directory: Path | None = None) -> LongRunReadings:
    """The readings of ``runs`` (every run of ``long_runs.RUNS``, as loaded from ``directory``)."""
    def lift(names, against="start", key="greedy", part="held_out"):
        return L.lift(names, against, key, part, directory)

    def outcomes_of(name, key="greedy", part="held_out"):
        return L.outcomes_of(name, key, part, directory)

    first = [runs[n]["log"] for n in runs if runs[n]["kind"] == "grpo"
             and runs[n]["start"] == "worked" and runs[n]["config"]["reward"] == "verifier"]
    start = {"greedy": outcomes_of("start").mean(),
             "sampled": outcomes_of("start", "sampled").mean(),
             "degenerate": np.mean([lg["degenerate_fraction"][0] for lg in first]),
             "batch_reward": np.mean([lg["reward_mean"][0] for lg in first])}

    sweep = tuple(f"grpo_lr{lr:g}" for lr in L.SWEEP_LRS)
    sweep_lift = {n: lift(both(runs, n)) for n in sweep}
    best = max(sweep, key=lambda n: (np.mean([runs[m]["evals"]["greedy"][-1]
                                              for m in both(runs, n)]),
                                     np.mean([runs[m]["evals"]["sampled"][-1]
                                              for m in both(runs, n)])))

    long = tuple(n for n in runs if n.startswith("from_long_sft"))
    long_lrs = tuple(n for n in long if runs[n]["config"]["reward"] == "verifier")
    long_random = next(n for n in long if runs[n]["config"]["reward"] == "random")
    long_paired = next(n for n in long_lrs
                       if runs[n]["config"]["lr"] == runs[long_random]["config"]["lr"])
    from_long = {n: lift(n, "plateau_sft") for n in long}

    steps = np.array([step_count(p) for p in PROTOCOL.held_out(HELD_OUT)])
    held = PROTOCOL.held_out(HELD_OUT)
    before = outcomes_of("start")
    after = np.stack([outcomes_of(n) for n in both(runs, best)])
    split = lift_by_chain(before, after, held, PROTOCOL.splits()[0])
    by_chain, seen = {"new": split.new, "seen": split.seen}, ~split.new_mask

    strict_names = both(runs, "strict_reward")
    length_names = both(runs, "length_constant")
    return LongRunReadings(
        runs=runs, directory=directory, start=start,
        entropy_per_token=float(np.mean([lg["entropy_mean"][0] for lg in first])),
        completion_length=float(np.mean([lg["completion_length_mean"][0] for lg in first])),
        sweep=sweep, sweep_lift=sweep_lift,
        sweep_sampled={n: lift(both(runs, n), key="sampled") for n in sweep},
        sweep_holm=dict(zip(sweep, holm([sweep_lift[n].p_value for n in sweep]))),
        sweep_kl=[np.mean([runs[m]["log"]["kl_mean"][-1] for m in both(runs, n)])
                  for n in sweep],
        best=best,
        random_lift=lift(RANDOM), outcome_lift=lift(OUTCOME), signal=lift(OUTCOME, RANDOM),
        long_sft=lift("plateau_sft"), long_sft_sampled=lift("plateau_sft", key="sampled"),
        long=long, long_lrs=long_lrs, long_random=long_random, long_paired=long_paired,
        from_long=from_long,
        long_holm=dict(zip(long_lrs, holm([from_long[n].p_value for n in long_lrs]))),
        long_signal=lift(long_paired, long_random),
        ladder_cpu={n: runs[n]["cpu_s"] / runs[OUTCOME]["cpu_s"] for n in LADDER},
        ladder_lift={n: lift(n) for n in LADDER},
        vs_grpo={n: lift(n, OUTCOME) for n in LADDER[:-1]},
        practice_pool={n: lift(n, "start", part="pool") for n in PRACTICE},
        practice_held={n: lift(n) for n in PRACTICE},
        steps=steps,
        by_step={s: paired_lift(before[steps == s], after[:, steps == s]) for s in (1, 2, 3, 4)},
        interaction=lift_gap(before, after, steps <= 2, steps >= 3),
        seen=seen, by_chain=by_chain, chain_gap=lift_gap(before, after, ~seen, seen),
        strict_names=strict_names, strict=lift(strict_names, both(runs, OUTCOME)),
        wrong_notes={n: 1 - (outcomes_of(n, "annotations_ok")[outcomes_of(n, "sampled")
                                                               > 0].mean())
                     for n in ["start", *strict_names, *both(runs, OUTCOME)]},
        length_names=length_names, length_diff=lift(length_names, both(runs, OUTCOME)),
    )


def _reg(x: Lift) -> dict:
    return {"greedy_lift_points": round(x.points, 2),
            "greedy_lift_ci95": [round(v, 2) for v in x.ci95], "seeds": x.seeds}


def long_run_registry(r: LongRunReadings) -> dict:
    """What chapter 10 records in ``data/results/10_word_problems.json``."""
    runs = r.runs
    return {
        "stored_runs": "data/runs/10_word_problems/ (make full)",
        "held_out": HELD_OUT,
        "stored_cpu_hours": round(sum(x["cpu_s"] for x in runs.values()) / 3600, 2),
        "start": {"greedy": round(float(r.start["greedy"]), 4),
                  "sampled": round(float(r.start["sampled"]), 4),
                  "degenerate_fraction": round(float(r.start["degenerate"]), 4),
                  "entropy_per_token": round(float(r.entropy_per_token), 4),
                  "completion_length": round(float(r.completion_length), 2)},
        "lr_sweep": [{"lr": runs[n]["config"]["lr"], **_reg(r.sweep_lift[n]),
                      "holm_p": round(float(r.sweep_holm[n]), 4),
                      "greedy_lift_per_seed": [round(v, 2) for v in r.sweep_lift[n].per_seed]}
                     for n in r.sweep],
        "chosen_lr": {"lr": runs[r.best]["config"]["lr"], **_reg(r.sweep_lift[r.best])},
        "random_reward": {**_reg(r.random_lift), "verifier_minus_random": _reg(r.signal)},
        "long_sft": {
            "steps": runs["plateau_sft"]["config"]["steps"],
            **_reg(r.long_sft),
            "verifier_minus_random": _reg(r.long_signal),
            "grpo": [{"run": n, "lr": runs[n]["config"]["lr"],
                      "reward": runs[n]["config"]["reward"], **_reg(r.from_long[n]),
                      **({"holm_p": round(float(r.long_holm[n]), 4)} if n in r.long_holm
                         else {})}
                     for n in r.long],
        },
        "expert_iteration": {n: {**_reg(r.ladder_lift[n]),
                                 "cpu_ratio_to_grpo": round(r.ladder_cpu[n], 3),
                                 **({"minus_grpo": _reg(r.vs_grpo[n])} if n in r.vs_grpo
                                    else {})}
                             for n in LADDER},
        "practice": {n: {"pool": _reg(r.practice_pool[n]), "held_out": _reg(r.practice_held[n])}
                     for n in PRACTICE},
        "by_steps": {str(s): _reg(r.by_step[s]) for s in (1, 2, 3, 4)},
        "by_steps_interaction": _reg(r.interaction),
        "by_calculation_chain": {
            "new_chain_problems": int((~r.seen).sum()),
            "interval_unit": "distinct calculation chains (grpo.lm.data.calculation_chain)",
            "new_chain": _reg(r.by_chain["new"]),
            "seen_chain": _reg(r.by_chain["seen"]),
            "new_minus_seen": _reg(r.chain_gap),
        },
        "strict_reward": {"minus_outcome": _reg(r.strict)},
        "length_constant": {"minus_outcome": _reg(r.length_diff)},
    }


__all__ = ["RANDOM", "OUTCOME", "LADDER", "PRACTICE", "LongRunReadings", "both", "read_long_runs",
           "long_run_registry"]
