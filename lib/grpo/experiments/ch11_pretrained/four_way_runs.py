"""Chapter 11's second decided experiment: ``design.FOUR_WAY_DESIGN``, run and read four ways.

Each run writes ``data/runs/11_pretrained/four_way/NAME.json``, in the order the design fixes:

    selection_<prompt>   the start's greedy answers to the selection problems (training problems)
                         under one candidate prompt (or the question alone): what chooses
                         ``design.FOUR_WAY_PROMPT`` by ``design.SECOND_SELECTION_RULE``
    pilot                GRPO from that prompt on training problems, ``design.PILOT_ITERATIONS``
                         long: what sets ``design.FOUR_WAY_ITERATIONS`` by ``ITERATION_RULE``
    start                the start's greedy answers to the held-out problems under that prompt
    <arm>_seed<s>        a run of one arm and seed: its log, its first batch, and its greedy
                         held-out answers at each checkpoint

Every completion's text is stored; every reading is computed from the texts
(``grpo.lm.verifier.read_calculation`` and the verifier's last number).

    python -m grpo.experiments.ch11_pretrained.four_way_runs --list
    python -m grpo.experiments.ch11_pretrained.four_way_runs --all --workers 2
"""
from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained import format_runs as F
from grpo.experiments.ch11_pretrained.format_runs import (greedy_under_prompt, renderer,
                                                           train_from_prompt)
from grpo.experiments.ch11_pretrained.registry import (read_run, registry_command, replayed,
                                                        retrain_runs, with_cpu_s,
                                                        store_runs)
from grpo.experiments.ch11_pretrained.smollm2_runs import one_equation_format
from grpo.lm.data import step_templates
from grpo.lm.hf import load_model
from grpo.lm.verifier import (CALCULATION_READINGS, equations_in, last_number_reward,
                              read_calculation)
from grpo.runstore import run_dir, unbits, writable
from grpo.stats import GroupChange, Lift, group_change, holm, paired_lift, shares_by_group

MODULE = "grpo.experiments.ch11_pretrained.four_way_runs"
RUN_FOLDER = run_dir("11_pretrained") / "four_way"
MODEL = "smollm2"


@dataclass(frozen=True)
class FourWayRun:
    """One run of the second design: a ``selection`` answer set under one prompt, the ``pilot``,
    the ``start``, or a ``grpo`` run of an arm (``design.FOUR_WAY_DESIGN.arms``) and seed."""
    kind: str                           # "selection" | "pilot" | "start" | "grpo"
    prompt: str = ""                    # a selection's prompt; "" for the chosen one
    arm: str = ""
    seed: int = 0
    note: str = ""


def _registry() -> dict:
    runs = {f"selection_{p}": FourWayRun("selection", p, note=f"the selection problems under "
                                                             f"{p}: {D.PROMPTS[p].note}")
            for p in ("chapter", *D.CANDIDATES)}
    runs["pilot"] = FourWayRun("pilot", seed=D.PILOT_SEED,
                               note="GRPO from the chosen prompt on training problems: the runs' "
                                    "length")
    runs["start"] = FourWayRun("start", note="the start, greedy on the held-out problems under "
                                             "the chosen prompt")
    for seed in range(D.FOUR_WAY_DESIGN.seeds):
        for arm, spec in D.FOUR_WAY_DESIGN.arms.items():
            runs[f"{arm}_seed{seed}"] = FourWayRun("grpo", arm=arm, seed=seed, note=spec.note)
    return runs


RUNS = _registry()


def committed_design() -> dict:
    """The design as committed before the runs (commit 5a638f6), as every run stores it: the
    record a results file keeps under its own key, apart from the results
    (``tests/test_ch11_four_way_exploratory.py`` holds its digest to that commit's)."""
    return json.loads(json.dumps(D.FOUR_WAY_DESIGN.as_record()))


def chosen_prompt_or_refuse() -> str:
    if D.FOUR_WAY_PROMPT is None:
        raise ValueError("design.FOUR_WAY_PROMPT is not set: run the selection and apply "
                         "design.SECOND_SELECTION_RULE (four_way_prompt) first")
    return D.FOUR_WAY_PROMPT


def iterations_or_refuse() -> int:
    if D.FOUR_WAY_ITERATIONS is None:
        raise ValueError("design.FOUR_WAY_ITERATIONS is not set: run the pilot and the start and "
                         "apply design.ITERATION_RULE (four_way_iterations) first")
    return D.FOUR_WAY_ITERATIONS


def prompt_tokens(tok, problems, prompt: str) -> list:
    """Each problem's prompt length in tokens under ``prompt`` (template and prefix included)."""
    render = renderer(prompt)
    return [len(tok(render(tok, p["question"]), add_special_tokens=False).input_ids)
            for p in problems]


def run(name: str, directory: Path | None = None) -> dict:
    """Run one registry entry in this process and return what its ``NAME.json`` stores (a run
    saves no weights, so ``directory`` changes nothing here)."""
    spec = RUNS[name]
    torch.set_num_threads(1)

    def work():
        out = {"name": name, "spec": asdict(spec), "design": committed_design()}
        if spec.kind == "selection":
            model, tok = load_model(MODEL, "cpu")
            problems = D.selection_problems()
            out["selection"] = greedy_under_prompt(model, tok, problems, spec.prompt)
            out["selection"]["prompt_tokens"] = prompt_tokens(tok, problems, spec.prompt)
        elif spec.kind == "pilot":
            _, _, out["log"], out["first_batch"] = train_from_prompt(
                chosen_prompt_or_refuse(), "verifier", D.PILOT_SEED, D.PILOT_ITERATIONS)
        elif spec.kind == "start":
            model, tok = load_model(MODEL, "cpu")
            out["held_out"] = {"0": greedy_under_prompt(model, tok, list(D.held_out_problems()),
                                                        chosen_prompt_or_refuse())}
        else:
            prompt, iterations = chosen_prompt_or_refuse(), iterations_or_refuse()
            marks = (D.checkpoints(iterations, D.FOUR_WAY_INTERMEDIATE) if spec.arm == "grpo"
                     else (iterations,))
            scored = {}

            def checkpoint(step, policy, tok):
                if step + 1 in marks:
                    scored[str(step + 1)] = greedy_under_prompt(
                        policy, tok, list(D.held_out_problems()), prompt)
            _, _, out["log"], out["first_batch"] = train_from_prompt(
                prompt, D.FOUR_WAY_DESIGN.arms[spec.arm].reward, spec.seed, iterations, checkpoint)
            out["held_out"] = scored
        return out
    return with_cpu_s(work)


def run_and_store(runs=None, workers: int = 2, directory: Path | None = None) -> list:
    """Run the second design's runs (``runs``: names, default all; the selection, the pilot and
    the start before the arms, which need the rules applied to them) in ``workers`` processes, or
    in this one when 1, and store each in ``directory`` (default ``RUN_FOLDER``)."""
    return store_runs(run, RUNS, RUN_FOLDER if directory is None else directory, runs, workers)


def retrain_dir() -> Path:
    """Where ``retrain`` writes: ``scratch/runs/11_pretrained/four_way/`` (``RUN_FOLDER`` itself
    only under ``GRPO_STORE=1``)."""
    return writable(RUN_FOLDER)


def retrain(names=None, workers: int = 2, again: bool = False) -> Path:
    """The chapter's RETRAIN switch: run registry entries (default all) into ``retrain_dir()``,
    never ``data/runs/``, and return that folder for ``load_run`` and ``four_way_endpoints``. A run
    already there is kept unless ``again``."""
    return retrain_runs(run, RUNS, RUN_FOLDER, names, workers, again)


def load_run(name: str, directory: Path | None = None) -> dict:
    """A stored run of the second design, from ``directory`` (default ``RUN_FOLDER``); a clear
    error, naming the command, if it was never run."""
    return read_run(MODULE, RUNS, RUN_FOLDER, name, directory)


# ----------------------------------------------------------------------------- reading the answers

def read_answers(texts, ended, problems) -> dict:
    """Per answer: its four-way reading (``read_calculation`` against the problem's one-step
    calculation, as strings), the last number right (0/1) and the one-equation format (0/1)."""
    chains = D.chains_of(problems)
    return {"four_way": np.array([read_calculation(t, c) for t, c in zip(texts, chains,
                                                                          strict=True)]),
            "last_number": np.array([last_number_reward(t, p["answer"])
                                     for t, p in zip(texts, problems, strict=True)]),
            "one_equation_format": np.array([one_equation_format(t, e)
                                             for t, e in zip(texts, ended, strict=True)])}


def shares(read: dict) -> dict:
    """The share of each four-way reading, of the last number right and of the format."""
    return {**{k: float(np.mean(read["four_way"] == k)) for k in CALCULATION_READINGS},
            "last_number": float(read["last_number"].mean()),
            "one_equation_format": float(read["one_equation_format"].mean())}


def reading_line(read: dict, lengths) -> str:
    """A handful of answers in one line: their mean length in tokens (``lengths``), how many take
    the one-equation form, how many fall in each four-way bin, (a) to (d), and how many end on the
    right number (what the reward reads)."""
    n = len(read["four_way"])
    bins = ", ".join(f"({letter}) {int((read['four_way'] == k).sum())}"
                     for letter, k in zip("abcd", CALCULATION_READINGS, strict=True))
    return (f"{np.mean(lengths):.0f} tokens on average; one-equation form "
            f"{read['one_equation_format'].sum():.0f}/{n}; {bins}; last number right "
            f"{read['last_number'].sum():.0f}/{n}")


# the outcomes an endpoint counts, per answer, from ``read_answers``
OUTCOMES = {
    "right": lambda r: (r["four_way"] == "right").astype(float),
    "slip": lambda r: (r["four_way"] == "slip").astype(float),
    "calculation": lambda r: np.isin(r["four_way"], ("slip", "right")).astype(float),
    "other_calculation": lambda r: (r["four_way"] == "other_calculation").astype(float),
    "no_equation": lambda r: (r["four_way"] == "no_equation").astype(float),
    "last_number": lambda r: r["last_number"].astype(float),
}


def _path_stamp(name: str, directory) -> int:
    path = (RUN_FOLDER if directory is None else Path(directory)) / f"{name}.json"
    return path.stat().st_mtime_ns if path.is_file() else 0


@functools.lru_cache(maxsize=None)
def _read_cached(name: str, iteration: str, directory: str | None, stamp: int) -> dict:
    run_ = load_run(name, directory)
    if run_["spec"]["kind"] == "selection":
        s = run_["selection"]
        return read_answers(s["texts"], unbits(s["ended"]), D.selection_problems())
    g = run_["held_out"][iteration]
    return read_answers(g["texts"], unbits(g["ended"]), D.held_out_problems())


def readings_of(name: str, iteration: int | None = None, directory: Path | None = None) -> dict:
    """``read_answers`` of a stored run: a selection run's answers, the start's, or an arm's at a
    checkpoint (``iteration``; default its last)."""
    if iteration is None and RUNS[name].kind == "grpo":
        iteration = max(int(k) for k in load_run(name, directory)["held_out"])
    key = "0" if RUNS[name].kind in ("start", "selection") else str(iteration)
    return _read_cached(name, key, None if directory is None else str(directory),
                        _path_stamp(name, directory))


def runs_of_arm(arm: str, seeds=None) -> list:
    """An arm's runs, seeds in order: every seed, or those in ``seeds`` (at least two)."""
    if arm not in D.FOUR_WAY_DESIGN.arms:
        raise ValueError(f"arm must be one of {list(D.FOUR_WAY_DESIGN.arms)}, got {arm!r}")
    every = range(D.FOUR_WAY_DESIGN.seeds)
    if seeds is not None and (len(set(seeds)) < 2 or not set(seeds) <= set(every)):
        raise ValueError(f"seeds must name at least two of the seeds {list(every)}, got {seeds!r}")
    return [n for n, s in RUNS.items() if s.arm == arm and (seeds is None or s.seed in seeds)]


def outcome(name: str, which: str, iteration: int | None = None,
            directory: Path | None = None) -> np.ndarray:
    """One outcome (``OUTCOMES``) per held-out answer of a stored run."""
    if which not in OUTCOMES:
        raise ValueError(f"which must be one of {list(OUTCOMES)}, got {which!r}")
    return OUTCOMES[which](readings_of(name, iteration, directory))


def _paired(before, after) -> Lift:
    return paired_lift(before, after, clusters=D.chains_of(D.held_out_problems()))


def change(arm: str, which: str = "right", iteration: int | None = None,
           directory: Path | None = None, seeds=None) -> Lift:
    """An arm's paired change in one outcome from the start, at a checkpoint (default the last),
    on the held-out problems, their calculations resampled, with the seeds' spread (every seed,
    or those in ``seeds``)."""
    return _paired(outcome("start", which, None, directory),
                   np.stack([outcome(n, which, iteration, directory)
                             for n in runs_of_arm(arm, seeds)]))


def minus_random(which: str = "right", directory: Path | None = None, seeds=None) -> Lift:
    """'grpo''s seed s against 'random_reward''s seed s at the last iteration, in one outcome
    (every seed, or those in ``seeds``)."""
    return _paired(np.stack([outcome(n, which, None, directory)
                             for n in runs_of_arm("random_reward", seeds)]),
                   np.stack([outcome(n, which, None, directory)
                             for n in runs_of_arm("grpo", seeds)]))


SECONDARY = ("calculation", "slip", "no_equation", "last_number", "right_minus_random")


@dataclass(frozen=True)
class FourWayEndpoints:
    """The second design's endpoints from the stored runs (``four_way_endpoints``): the primary,
    the five secondary ones with their Holm-adjusted p-values, and the effect it was powered
    for."""
    primary: Lift
    secondary: dict                     # SECONDARY's order: name -> Lift
    holm_p: dict
    detectable: float


def four_way_endpoints(directory: Path | None = None, seeds=None) -> FourWayEndpoints:
    """The primary (the change in share (d) at the last iteration) and the design's five
    secondary endpoints, Holm-corrected as one family; every run read from ``directory``, every
    seed or those in ``seeds``."""
    d = directory
    secondary = {"calculation": change("grpo", "calculation", None, d, seeds),
                 "slip": change("grpo", "slip", None, d, seeds),
                 "no_equation": change("grpo", "no_equation", None, d, seeds),
                 "last_number": change("grpo", "last_number", None, d, seeds),
                 "right_minus_random": minus_random("right", d, seeds)}
    adjusted = holm([x.p_value for x in secondary.values()])
    return FourWayEndpoints(primary=change("grpo", "right", None, d, seeds), secondary=secondary,
                            holm_p={k: float(p) for k, p in zip(secondary, adjusted, strict=True)},
                            detectable=D.FOUR_WAY_DESIGN.power["detectable_points"])


def _question_alone() -> dict:
    return F.load_run("start_chapter")["held_out"]["greedy"]


def question_alone_readings() -> dict:
    """``read_answers`` of the start asked the question alone on the held-out problems: the first
    decided design's stored ``start_chapter`` run (the same model, problems and greedy budget)."""
    g = _question_alone()
    return read_answers(g["texts"], unbits(g["ended"]), D.held_out_problems())


def against_question_alone(which: str = "right", directory: Path | None = None) -> Lift:
    """Exploratory, added after the runs were seen: 'grpo''s change in one outcome at its last
    checkpoint from the start asked the question alone (not its own start). What is paired: the
    question alone's one greedy run (greedy, so one run is all there is) is the ``before`` of every
    'grpo' seed, problem by problem; the interval resamples the 48 held-out calculations (each with
    its four wordings) and adds the five seeds' t-term, as ``change`` does."""
    if which not in OUTCOMES:
        raise ValueError(f"which must be one of {list(OUTCOMES)}, got {which!r}")
    return _paired(OUTCOMES[which](question_alone_readings()),
                   np.stack([outcome(n, which, None, directory) for n in runs_of_arm("grpo")]))


@dataclass(frozen=True)
class DecidedFourWay:
    """The first decided design read four ways (``decided_four_way``): exploratory, added after
    its results were seen, so no part of its design."""
    start: dict                         # the 'grpo' arm's start: ``shares`` of its answers
    grpo: dict                          # the 'grpo' arm: ``shares``, averaged over its seeds
    no_equation_problems: int           # held-out problems the start answered with no equation
    carried_by_no_equation: float       # points of the primary lift those problems carry
    with_equation: Lift                 # the primary (first equation) on the other problems


def decided_four_way(directory: Path | None = None) -> DecidedFourWay:
    """The first decided design's 'grpo' arm and its start (``format_runs``), every held-out
    answer read four ways; and its primary lift (the first equation) split by whether the start
    wrote an equation at all: the points the no-equation problems carry, and the paired lift on
    the rest. Runs read from ``directory`` (as ``format_runs.load_run``)."""
    problems = D.held_out_problems()

    def read(name):
        g = F.load_run(name, directory)["held_out"]["greedy"]
        return read_answers(g["texts"], unbits(g["ended"]), problems)

    start, names = F.start_of("grpo"), F.arm_runs("grpo")
    runs = [shares(read(n)) for n in names]
    no_eq = read(start)["four_way"] == "no_equation"
    before = F.reading(start, "first_equation", directory)
    after = np.stack([F.reading(n, "first_equation", directory) for n in names])
    carried = 100 * float((after.mean(0) - before)[no_eq].sum()) / len(problems)
    keep = ~no_eq
    with_equation = paired_lift(before[keep], after[:, keep],
                                clusters=[c for c, k in zip(D.chains_of(problems), keep) if k])
    return DecidedFourWay(start=shares(read(start)),
                          grpo={k: float(np.mean([r[k] for r in runs])) for k in runs[0]},
                          no_equation_problems=int(no_eq.sum()), carried_by_no_equation=carried,
                          with_equation=with_equation)


# ----------------------------------------------------------------------------- where it sits
# Exploratory, added after the runs were seen: outside the design and its family.

EXPLORATORY = "exploratory: added after the runs were seen; outside the design's family"
# the two templates that word a step with "gives" (grpo.lm.data.STEP_TEXT): an addition and a
# subtraction in nearly the same words
GIVES = {"gift": "X gives him N", "give": "X gives N to Y"}


def held_out_groups(by: str) -> tuple:
    """A label per held-out problem: its operation ("+", "-", "*", "/") when ``by`` is
    "operation"; when "wording", its "gives" template (a value of ``GIVES``) or "other"."""
    problems = D.held_out_problems()
    if by == "operation":
        return tuple(D.operation(c) for c in D.chains_of(problems))
    if by == "wording":
        return tuple(GIVES.get(step_templates(p)[0], "other") for p in problems)
    raise ValueError(f"by must be 'operation' or 'wording', got {by!r}")


def _conditions(directory) -> dict:
    """The held-out readings of each condition the chapter compares, (runs, problems): the
    question alone, the chosen prompt's start, 'grpo' at each checkpoint, 'random_reward' at the
    last."""
    last = iterations_or_refuse()
    out = {"question_alone": question_alone_readings()["four_way"][None],
           "start": readings_of("start", None, directory)["four_way"][None]}
    for it in D.checkpoints(last, D.FOUR_WAY_INTERMEDIATE):
        out[f"grpo_{it}"] = np.stack([readings_of(n, it, directory)["four_way"]
                                      for n in runs_of_arm("grpo")])
    out[f"random_reward_{last}"] = np.stack([readings_of(n, None, directory)["four_way"]
                                             for n in runs_of_arm("random_reward")])
    return out


@dataclass(frozen=True)
class GainByGroup:
    """The four shares by group of held-out problems (``gain_by_group``), each condition's seeds
    averaged, and each change split into the points each group carries (``grpo.stats``'
    ``GroupChange.carried``: (d)'s are ``carried[group]["right"]``)."""
    by: str                             # "operation" | "wording" (``held_out_groups``)
    shares: dict                        # condition -> grpo.stats.GroupShares
    from_start: dict                    # trained condition -> GroupChange from the chosen start
    from_question_alone: dict           # every other condition -> GroupChange from the question
    label: str = EXPLORATORY


def gain_by_group(by: str = "operation", directory: Path | None = None) -> GainByGroup:
    """Where the changes sit: the question alone, the chosen prompt's start, 'grpo' at each
    checkpoint and 'random_reward' at the last (``_conditions``), each read four ways by
    ``held_out_groups(by)``; the trained conditions' changes from the start, and every
    condition's from the question alone."""
    groups, read = held_out_groups(by), _conditions(directory)
    trained = [c for c in read if c not in ("question_alone", "start")]
    return GainByGroup(
        by=by,
        shares={c: shares_by_group(r, groups, CALCULATION_READINGS) for c, r in read.items()},
        from_start={c: group_change(read["start"], read[c], groups, CALCULATION_READINGS)
                    for c in trained},
        from_question_alone={c: group_change(read["question_alone"], read[c], groups,
                                             CALCULATION_READINGS)
                             for c in read if c != "question_alone"})


def first_operator(text) -> str:
    """The operator of an answer's first equation ("+", "-", "*", "/"); "several" when it has
    more than one, "none" when the answer writes no equation."""
    found = equations_in(text)
    if not found:
        return "none"
    return found[0].operators[0] if len(found[0].operators) == 1 else "several"


def gives_operators(directory: Path | None = None) -> dict:
    """On the held-out problems of each "gives" template (``GIVES``), the share of answers whose
    first equation's operator is each of + - * / (``first_operator``; and "several", "none"): the
    question alone, the chosen prompt's start and each 'grpo' seed at its last checkpoint, as
    {run: {wording: {operator: share}}}."""
    wording = np.array(held_out_groups("wording"))
    last = str(iterations_or_refuse())
    texts = {"question_alone": _question_alone()["texts"],
             "start": load_run("start", directory)["held_out"]["0"]["texts"],
             **{n: load_run(n, directory)["held_out"][last]["texts"] for n in runs_of_arm("grpo")}}
    kinds = ("+", "-", "*", "/", "several", "none")
    out = {}
    for run_, written in texts.items():
        ops = np.array([first_operator(t) for t in written])
        out[run_] = {w: {k: float(np.mean(ops[wording == w] == k)) for k in kinds}
                     for w in GIVES.values()}
    return out


def checkpoint_change(which: str = "right", since: int = 10,
                      directory: Path | None = None) -> Lift:
    """'grpo''s change in one outcome from its checkpoint ``since`` to its last, seed s paired
    with seed s, problem by problem; the interval resamples the held-out calculations and adds
    the seeds' t-term (``change``'s construction)."""
    last = iterations_or_refuse()
    if since not in D.checkpoints(last, D.FOUR_WAY_INTERMEDIATE) or since == last:
        raise ValueError(f"since must be a checkpoint before the last "
                         f"{D.checkpoints(last, D.FOUR_WAY_INTERMEDIATE)[:-1]}, got {since!r}")
    names = runs_of_arm("grpo")
    return _paired(np.stack([outcome(n, which, since, directory) for n in names]),
                   np.stack([outcome(n, which, None, directory) for n in names]))


def selection_change(directory: Path | None = None) -> GroupChange:
    """The chosen prompt's change on the selection problems (training problems) from the question
    alone, grouped by how the question alone's answer to each problem reads: what the prompt did
    to the answers that wrote no equation, and to those that were right."""
    alone = readings_of("selection_chapter", None, directory)["four_way"]
    chosen = readings_of(f"selection_{chosen_prompt_or_refuse()}", None, directory)["four_way"]
    return group_change(alone, chosen, alone, CALCULATION_READINGS)


@dataclass(frozen=True)
class SeedLeftOut:
    """One endpoint of ``four_way_endpoints`` with one seed left out (``leave_one_seed_out``):
    ``p`` is the primary's own p-value (it is tested alone at 0.05), a secondary's Holm-adjusted
    p-value over the five."""
    lift: Lift
    p: float
    holds: bool                         # the interval excludes 0 and p < 0.05
    survives: bool                      # ``holds`` as it does with every seed


def leave_one_seed_out(directory: Path | None = None) -> dict:
    """Each endpoint's verdict with one seed left out, as {left-out seed: {endpoint: SeedLeftOut}}
    (endpoints: "primary", then ``SECONDARY``): the design's endpoints on the other four seeds
    (both arms), the five secondaries Holm-corrected again as one family."""
    def verdicts(e: FourWayEndpoints) -> dict:
        lifts = {"primary": e.primary, **e.secondary}
        ps = {"primary": e.primary.p_value, **e.holm_p}
        return {k: (x, ps[k], x.significant and ps[k] < 0.05) for k, x in lifts.items()}
    every = verdicts(four_way_endpoints(directory))
    seeds = range(D.FOUR_WAY_DESIGN.seeds)
    out = {}
    for left in seeds:
        kept = verdicts(four_way_endpoints(directory, tuple(s for s in seeds if s != left)))
        out[left] = {k: SeedLeftOut(x, p, holds, holds == every[k][2])
                     for k, (x, p, holds) in kept.items()}
    return out


def change_verb(x: Lift, up: str = "raised", down: str = "lowered", holm_p: float = 0.0) -> str:
    """The verb a change earns: ``up`` or ``down`` only where its interval excludes 0 (and, for a
    secondary endpoint, its Holm-adjusted p-value is under 0.05), else "moved"."""
    if holm_p < 0.05 and x.ci95[0] > 0:
        return up
    if holm_p < 0.05 and x.ci95[1] < 0:
        return down
    return "moved"


@dataclass(frozen=True)
class FourWayAnswer:
    """The chapter's answer (``four_way_answer``): one sentence per finding, each worded as its
    figure allows, and the figures it reads."""
    gain: str                           # the primary, over the chosen prompt's start
    control: str                        # GRPO minus the random-reward control, seed for seed
    where: str                          # the group of problems that carries most of it
    against_alone: str                  # share (b) against the model asked the question alone
    growth: str                         # share (d) from the first checkpoint to the last
    summary: str                        # the four in one sentence, without their intervals

    @property
    def sentences(self) -> tuple:
        return (self.gain, self.control, self.where, self.against_alone, self.growth)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def four_way_answer(e: FourWayEndpoints, by_operation: GainByGroup, by_wording: GainByGroup,
                    start_operators: dict, other_vs_alone: Lift, growth: Lift,
                    growth_between: tuple, control_kept: tuple | None = None) -> FourWayAnswer:
    """Word the chapter's answer from its figures: the primary over the prompt's start (its verb
    from its interval); the operation that carries most of it, and the "gives" wording that
    carries most, with the operator the start wrote most on it (``start_operators``:
    ``gives_operators()["start"]``); share (b) against the question alone (an exploratory
    comparison: "ended where" only when its interval holds 0); and (d)'s change between the
    checkpoints ``growth_between`` ("nothing measurably grew" only when its interval holds 0).
    The control sentence reads the design's secondary endpoint GRPO minus the random reward
    ("beat" only where its interval excludes 0 and Holm allows) and, given ``control_kept`` as
    (sets whose verdict holds, sets) from ``leave_one_seed_out``, how often it holds with one seed
    left out.
    "Most" only where a group carries over half of the whole; the "gives" wording's shares end
    with the random-reward control's, where ``by_wording`` holds that arm at the last checkpoint.
    Quoted wordings and operators take typographic quotes, so a sentence holds no ASCII double
    quote beside its apostrophes (a glued string with both is shown escaped)."""
    verb = change_verb(e.primary)
    cost = 100 * (by_operation.shares["question_alone"].overall["right"]
                  - by_operation.shares["start"].overall["right"])
    gain = (f"With the form given by one worked example of each operation, GRPO {verb} the share "
            f"of held-out answers that write the problem's calculation and get it right, (d), by "
            f"{e.primary} over that prompt's start, across {e.primary.seeds} seeds"
            + (f", a start the examples had lowered by {cost:.1f} points from the model asked "
               "alone" if cost > 0 else "")
            + (", a change they could not tell from none." if verb == "moved" else "."))
    minus_random = e.secondary["right_minus_random"]
    beat = change_verb(minus_random, "beat", "fell behind", e.holm_p["right_minus_random"])
    if beat == "moved":
        control = (f"Seed for seed, it could not be told from the random-reward control, which "
                   f"pays as often but at random ({minus_random.points:+.1f} points).")
    else:
        control = (f"Seed for seed, it {beat} the random-reward control, which pays as often but "
                   f"at random, by {abs(minus_random.points):.1f} points")
        kept, sets = control_kept if control_kept is not None else (None, None)
        control += ("." if kept is None or kept == sets else
                    ", but with one seed left out that verdict holds in "
                    + (f"only {kept} of the {sets}" if kept else f"none of the {sets}") + " cases.")
    last = max(by_operation.from_start, key=lambda c: int(c.rsplit("_", 1)[1]) if
               c.startswith("grpo_") else -1)
    change = by_operation.from_start[last]
    top = max(change.carried, key=lambda g: change.carried[g]["right"])
    carried = change.carried[top]["right"]
    name = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}[top]
    words = by_wording.from_start[last]
    gift = max(words.carried, key=lambda g: words.carried[g]["right"])
    alone = by_wording.shares["question_alone"].shares[gift]["right"]
    start = by_wording.shares["start"].shares[gift]["right"]
    after = by_wording.shares[last].shares[gift]["right"]
    written = max(start_operators[gift], key=start_operators[gift].get)
    share = "Most" if carried > change.whole["right"] / 2 else "The largest part"
    where = (f"{share} of that gain sits on {name}: {carried:.1f} of the "
             f"{change.whole['right']:.1f} points. On the problems worded “{gift}”, where the "
             f"prompt's examples had the model write “{written}” in "
             f"{start_operators[gift][written]:.0%} of its answers, (d) was {alone:.0%} asked "
             f"alone, {start:.0%} under the examples and {after:.0%} after GRPO")
    control_arm = by_wording.shares.get("random_reward_" + last.rsplit("_", 1)[1])
    where += ("." if control_arm is None else
              f", against {control_arm.shares[gift]['right']:.0%} after the random-reward control.")
    if other_vs_alone.ci95[0] <= 0 <= other_vs_alone.ci95[1]:
        against = (f"Its share of other calculations, (b), ended where the model's own was when "
                   f"asked the question alone ({other_vs_alone}, a comparison made after the "
                   f"runs).")
    else:
        side = "below" if other_vs_alone.points < 0 else "above"
        against = (f"Its share of other calculations, (b), ended {side} the model's own when asked "
                   f"the question alone ({other_vs_alone}, a comparison made after the runs).")
    since, until = growth_between
    if growth.ci95[0] <= 0 <= growth.ci95[1]:
        grew = (f"Nothing measurably grew from {since} to {until} iterations: (d) moved "
                f"{growth.points:+.1f} points, which the seeds could not tell from none.")
    else:
        grew = (f"(d) {'grew' if growth.points > 0 else 'fell'} by {growth.points:+.1f} points "
                f"from {since} to {until} iterations.")
    summary = (f"with the form given by one worked example of each operation, GRPO {verb} the "
               f"share of answers that write the problem's calculation and get it right by "
               f"{e.primary.points:+.1f} points, "
               + (f"most of it on {name}, " if carried > change.whole["right"] / 2 else "")
               + f"worded “{gift}” above all, where the examples had the model write "
               f"“{written}”; its share of other calculations ended "
               + ("where the model's own was when asked the question alone"
                  if other_vs_alone.ci95[0] <= 0 <= other_vs_alone.ci95[1] else
                  f"{'below' if other_vs_alone.points < 0 else 'above'} the model's own when asked "
                  "the question alone")
               + ("; nothing measurably grew after " + str(since) + " iterations"
                  if growth.ci95[0] <= 0 <= growth.ci95[1] else ""))
    return FourWayAnswer(gain=gain, control=control, where=where, against_alone=against,
                         growth=grew, summary=summary)


# ----------------------------------------------------------------------------- the rules, applied

def candidate_scores(directory: Path | None = None) -> dict:
    """Each selection prompt's shares (``shares``) and mean prompt tokens on the selection
    problems, from the stored selection runs."""
    out = {}
    for name, spec in RUNS.items():
        if spec.kind == "selection":
            s = shares(readings_of(name, directory=directory))
            s["prompt_tokens"] = float(np.mean(load_run(name, directory)["selection"]
                                               ["prompt_tokens"]))
            out[spec.prompt] = s
    return out


@dataclass(frozen=True)
class PromptChoice:
    prompt: str
    qualified: tuple                    # the candidates that meet the rule
    meets_rule: bool


def four_way_prompt(scores: dict) -> PromptChoice:
    """``design.SECOND_SELECTION_RULE`` applied to ``candidate_scores()``."""
    def calc(p):
        return scores[p]["slip"] + scores[p]["right"]
    floor = calc("chapter") - D.CALCULATION_DROP
    near = [p for p in D.CANDIDATES if calc(p) >= floor - 1e-12]
    qualified = tuple(p for p in near if scores[p]["one_equation_format"] >= D.FORMAT_FLOOR)
    if qualified:
        best = min(qualified, key=lambda p: (scores[p]["prompt_tokens"],
                                             -scores[p]["one_equation_format"]))
        return PromptChoice(best, qualified, True)
    pool = near or list(D.CANDIDATES)
    best = max(pool, key=lambda p: (scores[p]["one_equation_format"], -D.CANDIDATES.index(p)))
    return PromptChoice(best, qualified, False)


def pilot_windows(log) -> list:
    """The pilot's training reward (the verifier's ``correct_mean``), averaged in windows of
    ``design.PILOT_WINDOW`` iterations."""
    r = [s["correct_mean"] for s in log]
    w = D.PILOT_WINDOW
    return [float(np.mean(r[i:i + w])) for i in range(0, len(r) - w + 1, w)]


def pilot_iterations(log) -> int:
    """``design.ITERATION_RULE`` before the budget's cap: the end of the first window whose mean
    is not more than ``PILOT_RISE`` above the window before, at least ``MIN_ITERATIONS``; the
    pilot's length when every window rises."""
    windows = pilot_windows(log)
    for k in range(1, len(windows)):
        if windows[k] <= windows[k - 1] + D.PILOT_RISE:
            return max(D.MIN_ITERATIONS, D.PILOT_WINDOW * (k + 1))
    return D.PILOT_WINDOW * len(windows)


@dataclass(frozen=True)
class LengthChoice:
    iterations: int                     # the runs' length
    intermediate: bool                  # whether the 10 and 20 checkpoints are kept
    from_pilot: int                     # the pilot rule's length before the cap
    cap: int                            # the budget's cap (with the kept checkpoints)
    spent_cpu_s: float                  # the selection, the pilot and the start
    iteration_cpu_s: float              # the pilot's CPU-seconds per iteration
    evaluation_cpu_s: float             # the start's CPU-seconds (load and held-out greedy)
    planned_cpu_s: float                # the runs at the chosen length, so costed


def runs_cost(iterations: int, intermediate: bool, iteration_cpu_s: float,
              evaluation_cpu_s: float) -> float:
    """What the arms' runs cost at ``iterations``, as ``BUDGET_RULE`` costs them: every seed's two
    runs train ``iterations`` each; 'grpo' is scored at its checkpoints, 'random_reward' once."""
    evaluations = len(D.checkpoints(iterations, intermediate)) + 1
    return D.FOUR_WAY_DESIGN.seeds * (2 * iterations * iteration_cpu_s
                                      + evaluations * evaluation_cpu_s)


def four_way_iterations(directory: Path | None = None) -> LengthChoice:
    """``design.ITERATION_RULE`` and ``BUDGET_RULE`` applied to the stored pilot, start and
    selection runs."""
    pilot, start = load_run("pilot", directory), load_run("start", directory)
    spent = sum(load_run(n, directory)["cpu_s"] for n, s in RUNS.items()
                if s.kind in ("selection", "pilot", "start"))
    per_iteration = float(np.mean([s["cpu_s"] for s in pilot["log"]]))
    per_evaluation = float(start["cpu_s"])
    left = D.FOUR_WAY_BUDGET_CPU_H * 3600 - spent
    wanted = pilot_iterations(pilot["log"])
    for intermediate in (True, False):
        fits = [n for n in range(D.PILOT_WINDOW, D.PILOT_ITERATIONS + 1, D.PILOT_WINDOW)
                if runs_cost(n, intermediate, per_iteration, per_evaluation) <= left]
        cap = max(fits, default=0)
        if cap >= D.MIN_ITERATIONS:     # the rule's length needs no fewer than MIN_ITERATIONS
            n = min(wanted, cap)
            return LengthChoice(n, intermediate, wanted, cap, spent, per_iteration, per_evaluation,
                                runs_cost(n, intermediate, per_iteration, per_evaluation))
    n = max(cap, D.PILOT_WINDOW)
    return LengthChoice(n, False, wanted, cap, spent, per_iteration, per_evaluation,
                        runs_cost(n, False, per_iteration, per_evaluation))




def replay(name: str = "grpo_seed0", n: int = 2) -> tuple[dict, dict]:
    """(stored, fresh): a stored run's first ``n`` iterations (logs without timings, and the first
    batch) and the same iterations re-run by this code, for ``results.mismatches``."""
    stored = load_run(name)
    if stored["design"] != committed_design():
        raise ValueError(f"{name} was run under another design than design.FOUR_WAY_DESIGN")
    spec = RUNS[name]
    if spec.kind == "pilot":
        reward, seed = "verifier", D.PILOT_SEED
    else:
        reward, seed = D.FOUR_WAY_DESIGN.arms[spec.arm].reward, spec.seed
    _, _, log, first = train_from_prompt(chosen_prompt_or_refuse(), reward, seed, n)
    return replayed(stored, log, first, n)


def main(argv=None) -> None:
    registry_command(MODULE, __doc__, run_and_store, RUNS, argv)


if __name__ == "__main__":
    main()
