"""Chapter 9's readings of its stored grids, computed once: the chapter (which writes its results
file from them, ``grid_registry``) and its lab notes (which show them as tables) call these
functions, so the two pages cannot drift apart or repeat each other's code.

``read_grids(tok, retrain)`` reads every stored file of the chapter (``grids``' jobs, through
``grpo.runstore.addition_jobs``) and returns a ``GridReadings``: the SFT run and its start, the
learning-rate sweep and the main run, pass@k to 256 samples, the 2 x 2 of starts and updates, the
same comparison over four SFT runs, SFT for the same CPU, the ablation family and its replication,
where the lift lands (carries, commuted twins) and the map of starts. Each part is a small frozen
dataclass, computed by the function of the same name; ``retrain=True`` trains every stored run
again into scratch/runs/09_addition/, never over data/runs/.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from grpo.experiments.ch09_addition import grids as Gd
from grpo.lm import addition as A
from grpo.lm.eval import pass_at_k, pass_at_k_per_problem
from grpo.runstore.addition_jobs import (GRPO_RECIPE, LEVELS, SFT_RUN, Job, stored_endpoints,
                                         stored_jobs, stored_sft_run)
from grpo.stats import Lift, holm, lift_gap, over_seeds, paired_lift

PUBLISHED_START = 0.36          # the published run's start: greedy accuracy 0.360
LRS = (3e-5, 1e-4, 3e-4, 1e-3)  # the learning rates tried, three seeds each
SWEEP_SEEDS = (0, 1, 2)
MORE_SEEDS = (3, 4)             # two more seeds at the chosen rate make the main run's five
K = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PAIRED_K = (1, 16, 256)         # pass@k's paired changes, at these k
MANY_SAMPLES = 256

# Every stored file of the chapter, for what retraining them costs (grids.retrain_cost).
STORED_FILES = ("sft/sft_run", "lr_sweep", "lr_sweep_more_seeds", "pass_at_k", "sft_control",
                "endpoints/annealed_lengths", "sft/annealed_pick", "starts_2x2",
                *[f"sft/{kind}_seed{s}" for s in Gd.SFT_SEEDS
                  for kind in ("sft_run", "annealed_pick")],
                "starts_by_sft_seed", "ablations", "replication", "start_map")


def stack(runs, key: str = "greedy") -> np.ndarray:
    """(seeds, problems): greedy 0/1, or each problem's mean over its samples."""
    return np.stack([r[key] if key == "greedy" else r[key].mean(1) for r in runs])


def lift_of(before: dict, runs, key: str = "greedy") -> Lift:
    """The paired lift of ``runs`` over the start ``before``, greedy or sampled."""
    b = before[key] if key == "greedy" else before[key].mean(1)
    return paired_lift(b, stack(runs, key))


@dataclass(frozen=True)
class SFTStarts:
    """The constant-rate SFT run every start comes from, and the chapter's start: the first
    validation check whose greedy accuracy reaches the published start's."""
    history: dict
    starts: dict                # SFT step (or a start's name) -> weights
    val_greedy: dict            # SFT step -> validation greedy accuracy
    start: int


def sft_run(tok, retrain: bool = False) -> SFTStarts:
    history, starts = stored_sft_run("sft_run", SFT_RUN, LEVELS, tok, retrain=retrain)
    val_greedy = dict(zip(history["eval_step"], history["eval_greedy"]))
    start = next(step for step, g in val_greedy.items() if g >= PUBLISHED_START)
    return SFTStarts(history, dict(starts), val_greedy, start)


@dataclass(frozen=True)
class Sweep:
    """The learning-rate sweep from the start, the rate chosen on validation and the main run:
    that rate's five seeds."""
    before: dict                # the start's per-problem test outcomes
    runs_by_lr: dict            # lr -> its three seeds' runs (with their logs)
    val_final: dict             # lr -> final validation greedy accuracy, mean over seeds
    lr: float                   # the reference rate: the best final validation accuracy
    lifts: dict                 # lr -> greedy lift over the start
    main_runs: list             # the reference rate's five seeds
    greedy_lift: Lift
    sampled_lift: Lift


def lr_sweep(starts: dict, start, tok, retrain: bool = False) -> Sweep:
    R = GRPO_RECIPE
    jobs = [Job(start, None)] + [Job(start, replace(R, lr=lr, seed=s))
                                 for lr in LRS for s in SWEEP_SEEDS]
    out = stored_jobs("lr_sweep", jobs, starts, tok, retrain=retrain)
    n = len(SWEEP_SEEDS)
    before = out[0]
    runs_by_lr = {lr: out[1 + i * n: 1 + (i + 1) * n] for i, lr in enumerate(LRS)}
    val_final = {lr: float(np.mean([r["evals"]["greedy"][-1] for r in runs]))
                 for lr, runs in runs_by_lr.items()}
    lr = max(LRS, key=lambda x: val_final[x])
    extra = stored_jobs("lr_sweep_more_seeds",
                        [Job(start, replace(R, lr=lr, seed=s)) for s in MORE_SEEDS],
                        starts, tok, retrain=retrain)
    main_runs = runs_by_lr[lr] + extra
    return Sweep(before, runs_by_lr, val_final, lr,
                 {x: lift_of(before, runs) for x, runs in runs_by_lr.items()}, main_runs,
                 lift_of(before, main_runs), lift_of(before, main_runs, "sampled"))


@dataclass(frozen=True)
class PassAtK:
    """The start and the main run's five final models, each test sum of the first
    ``A.MANY_PROBLEMS`` sampled ``MANY_SAMPLES`` times: pass@k at each of ``K``."""
    before: list                # pass@k of the start, one per k in K
    after: np.ndarray           # the five seeds' mean pass@k, one per k in K
    paired: dict                # k in PAIRED_K -> the paired change, points
    many: list                  # the start's, then each seed's (problems, 256) 0/1


def pass_at_k_runs(starts: dict, start, lr: float, tok, retrain: bool = False) -> PassAtK:
    jobs = [Job(start, None, samples=1, many_samples=MANY_SAMPLES)]
    jobs += [Job(start, replace(GRPO_RECIPE, lr=lr, seed=s), samples=1,
                 many_samples=MANY_SAMPLES) for s in range(5)]
    many = [r["many_sampled"] for r in stored_jobs("pass_at_k", jobs, starts, tok,
                                                  retrain=retrain)]
    before = [pass_at_k(many[0], k) for k in K]
    after = np.mean([[pass_at_k(m, k) for k in K] for m in many[1:]], axis=0)
    paired = {k: paired_lift(pass_at_k_per_problem(many[0], k),
                             np.stack([pass_at_k_per_problem(m, k) for m in many[1:]]))
              for k in PAIRED_K}
    return PassAtK(before, after, paired, many)


@dataclass(frozen=True)
class TwoByTwo:
    """Two starts (the snapshot; an annealed SFT run of about its validation accuracy) crossed
    with three updates (``grids.updates``), five seeds a cell."""
    annealed_lengths: list      # each annealed length's endpoint (steps, validation greedy)
    pick: int                   # the index of the length chosen
    steps: int                  # its length
    val_greedy: float           # its validation greedy accuracy at the end
    key: str                    # its name among the starts
    state: dict                 # its weights
    updates: dict               # name -> config
    before: dict                # start -> its per-problem test outcomes
    runs: dict                  # (start, update) -> runs
    lift: dict                  # (start, update) -> lift over that start
    minus: dict                 # (start, other update) -> GRPO minus it, paired seed by seed


def two_by_two(starts: dict, sft: SFTStarts, sweep: Sweep, tok,
               retrain: bool = False) -> TwoByTwo:
    start, configs = sft.start, Gd.anneal_configs()
    annealed = stored_endpoints("annealed_lengths", configs, tok, retrain=retrain)
    target = sft.val_greedy[start]
    pick = min(range(len(annealed)), key=lambda i: abs(annealed[i]["val_greedy"] - target))
    history, states = stored_sft_run("annealed_pick", configs[pick], (), tok, retrain=retrain)
    steps = history["step"][-1]
    if history["eval_greedy"][-1] != annealed[pick]["val_greedy"]:
        raise ValueError("the annealed pick's stored run does not end where its length's "
                         "endpoint does")
    key = f"annealed, {steps} steps"
    state = states[steps]
    ups = Gd.updates(GRPO_RECIPE, sweep.lr)
    out = iter(stored_jobs("starts_2x2", Gd.grid_jobs(start, key, ups), {**starts, key: state},
                           tok, retrain=retrain))
    base = {start: sweep.before, key: next(out)}
    runs = {(s, name): sweep.main_runs if (s == start and name == "GRPO")
            else [next(out) for _ in Gd.CELL_SEEDS]
            for s in (start, key) for name in ups}
    lifts = {k: lift_of(base[k[0]], r) for k, r in runs.items()}
    minus = {(s, other): paired_lift(stack(runs[s, other]), stack(runs[s, "GRPO"]))
             for s in (start, key) for other in list(ups)[1:]}
    return TwoByTwo(annealed, pick, steps, history["eval_greedy"][-1], key, state, ups, base,
                    runs, lifts, minus)


@dataclass(frozen=True)
class AcrossSFT:
    """The 2 x 2's comparison repeated from three more SFT runs (``grids.SFT_SEEDS``), each cut as
    a snapshot (the first check reaching 0.36) and at the annealed length: one row per SFT run,
    and a t-interval over the four starts' mean lifts."""
    per_start: dict             # kind -> [(SFT seed, start test greedy, {update: lift points})]
    over_starts: dict           # (kind, update or "GRPO minus <update>") -> SeedInterval


def across_sft_runs(starts: dict, sft: SFTStarts, grid: TwoByTwo, tok,
                    retrain: bool = False) -> AcrossSFT:
    more, added = {}, {}
    for s in Gd.SFT_SEEDS:
        hist_s, states_s = stored_sft_run(f"sft_run_seed{s}", Gd.SNAPSHOT_RUN, (PUBLISHED_START,),
                                          tok, seed=s, retrain=retrain)
        step = next(t for t, g in zip(hist_s["eval_step"], hist_s["eval_greedy"])
                    if g >= PUBLISHED_START)
        _, annealed_s = stored_sft_run(f"annealed_pick_seed{s}", Gd.anneal_configs()[grid.pick],
                                       (), tok, seed=s, retrain=retrain)
        more[s] = {"snapshot": f"snapshot, SFT seed {s}", "annealed": f"annealed, SFT seed {s}"}
        added[more[s]["snapshot"]] = states_s[step]
        added[more[s]["annealed"]] = annealed_s[grid.steps]
    keys = [key for kinds in more.values() for key in kinds.values()]
    out = iter(stored_jobs("starts_by_sft_seed", Gd.across_jobs(keys, grid.updates),
                           {**starts, **added}, tok, retrain=retrain))
    per_start = {"snapshot": [], "annealed": []}
    for kind, start in (("snapshot", sft.start), ("annealed", grid.key)):   # SFT seed 0
        per_start[kind].append(
            (0, grid.before[start]["greedy"].mean(),
             {u: lift_of(grid.before[start], grid.runs[start, u][:3]).points
              for u in grid.updates}))
    for s, kinds in more.items():
        for kind in kinds:
            base = next(out)
            runs = {u: [next(out) for _ in Gd.UPDATE_SEEDS] for u in grid.updates}
            per_start[kind].append(
                (s, base["greedy"].mean(),
                 {u: lift_of(base, runs[u]).points for u in grid.updates}))
    over = {(kind, u): over_seeds([row[2][u] for row in rows])
            for kind, rows in per_start.items() for u in grid.updates}
    over.update({(kind, f"GRPO minus {u}"): over_seeds([row[2]["GRPO"] - row[2][u]
                                                        for row in rows])
                 for kind, rows in per_start.items() for u in list(grid.updates)[1:]})
    return AcrossSFT(per_start, over)


@dataclass(frozen=True)
class Control:
    """SFT for the same CPU: GRPO's CPU in SFT steps (``grids.control_config``), decayed from
    3e-4, five data-order seeds from the start."""
    config: object
    runs: list
    lift: Lift
    grpo_minus: Lift            # GRPO's main run minus it, paired by seed index


def sft_control(starts: dict, start, sweep: Sweep, tok, retrain: bool = False) -> Control:
    cfg = Gd.control_config(GRPO_RECIPE)
    runs = stored_jobs("sft_control", [Job(start, replace(cfg, seed=s)) for s in range(1, 6)],
                       starts, tok, retrain=retrain)
    return Control(cfg, runs, lift_of(sweep.before, runs),
                   paired_lift(stack(runs), stack(sweep.main_runs)))


@dataclass(frozen=True)
class Ablations:
    """Each of ``grids.ABLATIONS`` at the reference rate and ``grids.STRESS`` times it, five seeds,
    as paired differences from the reference; Holm-adjusted as one family, and each row called
    different run again on five fresh seeds."""
    reference: dict             # rate multiplier -> the reference's runs
    runs: dict                  # (row, multiplier) -> runs
    diff: dict                  # (row, multiplier) -> the row minus the reference
    adjusted: dict              # (row, multiplier) -> Holm-adjusted p
    called: list                # the (row, multiplier) pairs called different
    replicated: dict            # called pair -> its difference on the fresh seeds
    stress_ref: Lift            # the reference's own lift at the stressed rate


def ablation_family(starts: dict, start, sweep: Sweep, tok, retrain: bool = False) -> Ablations:
    R, lr = GRPO_RECIPE, sweep.lr
    out = iter(stored_jobs("ablations", Gd.ablation_jobs(start, R, lr), starts, tok,
                           retrain=retrain))
    reference = {1: sweep.main_runs, Gd.STRESS: [next(out) for _ in Gd.SEEDS5]}
    runs = {(name, m): [next(out) for _ in Gd.SEEDS5]
            for name in Gd.ABLATIONS for m in (1, Gd.STRESS)}
    diff = {k: paired_lift(stack(reference[k[1]]), stack(r)) for k, r in runs.items()}
    adjusted = dict(zip(diff, holm([d.p_value for d in diff.values()])))
    called = [k for k in diff if adjusted[k] < 0.05]
    rep_keys = sorted(set(called), key=lambda k: list(diff).index(k))
    rep = iter(stored_jobs("replication", Gd.replication_jobs(start, R, lr, rep_keys), starts,
                           tok, retrain=retrain))
    fresh_ref = {m: [next(rep) for _ in Gd.FRESH] for m in sorted({m for _, m in rep_keys})}
    replicated = {k: paired_lift(stack(fresh_ref[k[1]]), stack([next(rep) for _ in Gd.FRESH]))
                  for k in rep_keys}
    return Ablations(reference, runs, diff, adjusted, called, replicated,
                     lift_of(sweep.before, reference[Gd.STRESS]))


@dataclass(frozen=True)
class Splits:
    """The main run's lift on test sums with and without a units carry, and with and without their
    commuted twin (``48+24`` for ``24+48``) among the training sums, and the gaps between them."""
    masks: dict                 # name -> boolean mask over the test sums
    lift: dict                  # name -> lift on those sums
    gaps: dict                  # "carry minus no carry", "twin minus no twin" -> Lift


def where_it_lands(sweep: Sweep) -> Splits:
    train, _, test = A.make_addition_splits()
    carry = np.array([A.carries(p) for p in test])
    twin = np.array(A.commuted_twin_in_train(test, train))
    before, after = sweep.before["greedy"], stack(sweep.main_runs)
    masks = {"units carry": carry, "no carry": ~carry, "commuted twin in training": twin,
             "no twin": ~twin}
    return Splits(masks, {k: paired_lift(before[m], after[:, m]) for k, m in masks.items()},
                  {"carry minus no carry": lift_gap(before, after, carry, ~carry),
                   "twin minus no twin": lift_gap(before, after, twin, ~twin)})


def start_map(starts: dict, sft: SFTStarts, sweep: Sweep, control: Control, tok,
              retrain: bool = False) -> list:
    """From the first check reaching each of ``LEVELS`` (and the start): GRPO at the reference rate
    and SFT for the same CPU, three seeds each, as one dict per start (lifts greedy, as the share
    of the start's errors fixed, and sampled; the first batch's degenerate groups)."""
    map_starts = sorted({sft.start} | {next(s for s in sft.history["eval_step"]
                                            if sft.val_greedy[s] >= level) for level in LEVELS})
    out = iter(stored_jobs("start_map", Gd.map_jobs(map_starts, sft.start, GRPO_RECIPE, sweep.lr,
                                                    control.config), starts, tok,
                           retrain=retrain))
    rows = []
    for s0 in map_starts:
        base = next(out)
        runs = (sweep.runs_by_lr[sweep.lr] if s0 == sft.start
                else [next(out) for _ in Gd.MAP_SEEDS])
        sfts = [next(out) for _ in Gd.MAP_SEEDS]
        L, L_sft = lift_of(base, runs), lift_of(base, sfts)
        S, S_sft = lift_of(base, runs, "sampled"), lift_of(base, sfts, "sampled")
        errors = 1 - base["greedy"].mean()
        rows.append(dict(
            sft_steps=s0,
            sft_greedy=float(base["greedy"].mean()),
            sft_sampled=float(base["sampled"].mean()),
            pass_at_4=pass_at_k(base["sampled"], 4),
            entropy=float(np.mean([r["log"]["entropy_mean"][0] for r in runs])),
            degenerate_fraction=float(np.mean([r["log"]["degenerate_fraction"][0]
                                               for r in runs])),
            greedy_lift_points=L.points,
            greedy_lift_ci95=L.ci95,
            lift=L,
            relative_lift=L.points / 100 / errors if errors > 0 else 0.0,
            sampled_lift_points=S.points,
            sampled_lift_ci95=S.ci95,
            sft_greedy_lift_points=L_sft.points,
            sft_greedy_lift_ci95=L_sft.ci95,
            sft_lift=L_sft,
            sft_relative_lift=L_sft.points / 100 / errors if errors > 0 else 0.0,
            sft_sampled_lift_points=S_sft.points,
            grpo_minus_sft=paired_lift(stack(sfts), stack(runs)),
        ))
    return rows


@dataclass(frozen=True)
class GridReadings:
    """Everything chapter 9 and its lab notes read from the stored runs."""
    sft: SFTStarts
    sweep: Sweep
    passk: PassAtK
    grid: TwoByTwo
    across: AcrossSFT
    control: Control
    ablations: Ablations
    splits: Splits
    map: list


def read_grids(tok, retrain: bool = False) -> GridReadings:
    """Every stored file of chapter 9, read (or, with ``retrain``, trained again into scratch)."""
    sft = sft_run(tok, retrain)
    starts = sft.starts
    sweep = lr_sweep(starts, sft.start, tok, retrain)
    passk = pass_at_k_runs(starts, sft.start, sweep.lr, tok, retrain)
    grid = two_by_two(starts, sft, sweep, tok, retrain)
    across = across_sft_runs(starts, sft, grid, tok, retrain)
    control = sft_control(starts, sft.start, sweep, tok, retrain)
    ablations = ablation_family(starts, sft.start, sweep, tok, retrain)
    return GridReadings(sft, sweep, passk, grid, across, control, ablations, where_it_lands(sweep),
                    start_map(starts, sft, sweep, control, tok, retrain))


def _r2(x) -> float:
    return round(float(x), 2)


def _r4(x) -> float:
    return round(float(x), 4)


def _reg(x: Lift) -> dict:
    return {"greedy_lift_points": _r2(x.points), "greedy_lift_ci95": [_r2(v) for v in x.ci95],
            "seeds": x.seeds}


def _greedy_bits(run) -> str:
    """Per-problem greedy outcomes in test order, one character each ('1' right, '0' wrong)."""
    return "".join(str(int(v)) for v in run["greedy"])


def _sampled_counts(run) -> str:
    """Per-problem right answers among the samples, one letter each: 'a' = 0, 'b' = 1, ..."""
    return "".join(chr(ord("a") + int(v)) for v in run["sampled"].sum(1))


_CELL_NAMES = {"GRPO": "grpo", "SFT, GRPO's optimizer": "sft", "GRPO, random reward": "random"}


def grid_registry(r: GridReadings) -> dict:
    """What chapter 9 records in ``data/results/09_grpo_addition.json``."""
    sw, g, ab = r.sweep, r.grid, r.ablations
    start, ann = r.sft.start, g.key
    cells = {(s, u): f"{kind}/{_CELL_NAMES[u]}" for s, kind in ((start, "snapshot"),
                                                                (ann, "annealed"))
             for u in g.updates}
    return {"addition": {
        "sft_start_step": start,
        "sft_greedy": _r4(sw.before["greedy"].mean()),
        "sft_sampled": _r4(sw.before["sampled"].mean()),
        "seeds": len(sw.main_runs),
        "lr": sw.lr,
        "greedy_lift_points": _r2(sw.greedy_lift.points),
        "greedy_lift_ci95": [_r2(v) for v in sw.greedy_lift.ci95],
        "greedy_lift_per_seed": [_r2(v) for v in sw.greedy_lift.per_seed],
        "sampled_lift_points": _r2(sw.sampled_lift.points),
        "sampled_lift_ci95": [_r2(v) for v in sw.sampled_lift.ci95],
        "greedy_after": _r4(stack(sw.main_runs).mean()),
        "pass_at_k_before": {int(k): _r4(v) for k, v in zip(K, r.passk.before)},
        "pass_at_k_after": {int(k): _r4(v) for k, v in zip(K, r.passk.after)},
        "pass_at_k_paired": {int(k): _reg(v) for k, v in r.passk.paired.items()},
        "controls": {cells[k]: _reg(v) for k, v in g.lift.items()},
        "across_sft_runs": {
            "sft_seeds": [0, *Gd.SFT_SEEDS],
            "update_seeds_per_start": len(Gd.UPDATE_SEEDS),
            "interval": "t over the SFT runs' mean lifts (the start as the unit)",
            "start_test_greedy": {kind: [_r4(acc) for _, acc, _ in rows]
                                  for kind, rows in r.across.per_start.items()},
            **{f"{kind}/{u}": {"greedy_lift_points": _r2(x.mean),
                               "greedy_lift_ci95": [_r2(v) for v in x.ci95],
                               "per_start": [_r2(v) for v in x.per_seed]}
               for (kind, u), x in r.across.over_starts.items()},
        },
        "annealed_start": {"steps": g.steps, "validation_greedy": _r4(g.val_greedy),
                           "test_greedy": _r4(g.before[ann]["greedy"].mean())},
        "random_reward": {
            "snapshot_grpo_minus_random": _reg(g.minus[start, "GRPO, random reward"]),
            "annealed_grpo_minus_random": _reg(g.minus[ann, "GRPO, random reward"]),
        },
        "sft_low_lr": {"steps": r.control.config.steps, "lr": r.control.config.lr,
                       **_reg(r.control.lift),
                       "per_seed": [_r2(v) for v in r.control.lift.per_seed],
                       "grpo_minus_sft": _reg(r.control.grpo_minus)},
        "lrs_tried": {f"{lr:g}": _reg(L) for lr, L in sw.lifts.items()},
        "ablations": {name: {"vs_reference": _reg(ab.diff[name, 1]),
                             "holm_p": _r4(ab.adjusted[name, 1]),
                             "stressed_vs_reference": _reg(ab.diff[name, Gd.STRESS]),
                             "stressed_holm_p": _r4(ab.adjusted[name, Gd.STRESS])}
                      for name in Gd.ABLATIONS},
        "replicated": {f"{n} x{m}": _reg(v) for (n, m), v in ab.replicated.items()},
        "stress_lr": sw.lr * Gd.STRESS,
        "splits": {k: _reg(v) for k, v in {**r.splits.lift, **r.splits.gaps}.items()},
        "outcomes": {
            "about": "the main run's per-problem test outcomes, in test order: greedy as 0/1 "
                     "characters, sampled as the number right of 16 ('a' = 0, 'b' = 1, ...)",
            "start_greedy": _greedy_bits(sw.before),
            "start_sampled": _sampled_counts(sw.before),
            "grpo_greedy_per_seed": [_greedy_bits(x) for x in sw.main_runs],
            "grpo_sampled_per_seed": [_sampled_counts(x) for x in sw.main_runs],
            "continued_sft_greedy_per_seed": [_greedy_bits(x) for x in r.control.runs],
        },
        "lift_vs_start": [{k: _r4(v) if isinstance(v, float)
                           else [_r2(c) for c in v] if isinstance(v, tuple) else v
                           for k, v in p.items()
                           if k not in ("lift", "sft_lift", "grpo_minus_sft")}
                          for p in r.map],
        "map_sft": [{"sft_greedy": _r4(p["sft_greedy"]), **_reg(p["sft_lift"]),
                     "grpo_minus_sft": _reg(p["grpo_minus_sft"])} for p in r.map],
        "relative_lift": [{"sft_greedy": _r4(p["sft_greedy"]), "grpo": _r4(p["relative_lift"]),
                           "sft": _r4(p["sft_relative_lift"])} for p in r.map],
    }}


__all__ = ["PUBLISHED_START", "LRS", "SWEEP_SEEDS", "MORE_SEEDS", "K", "PAIRED_K", "MANY_SAMPLES",
           "STORED_FILES", "stack", "lift_of", "SFTStarts", "sft_run", "Sweep", "lr_sweep",
           "PassAtK",
           "pass_at_k_runs", "TwoByTwo", "two_by_two", "AcrossSFT", "across_sft_runs", "Control",
           "sft_control", "Ablations", "ablation_family", "Splits", "where_it_lands", "start_map",
           "GridReadings", "read_grids", "grid_registry"]
