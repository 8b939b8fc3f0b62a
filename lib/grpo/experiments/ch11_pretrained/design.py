"""Chapter 11's two decided experiments, each written down before its runs: the split of the
calculations, the prompts that give the answer's format for free, the arms, the endpoints and the
seeds. The first design (``DESIGN``, run by ``format_runs``) comes first; the second
(``FOUR_WAY_DESIGN``, run by ``four_way_runs``) is at the end of this module.

Chapter 11's first experiment (``smollm2_runs``) found that GRPO moved where SmolLM2's answer ends
(one equation, then stop) and could not tell whether it moved the arithmetic. This design asks the
question that remains: **once the format is given for free, does the verifier's reward teach the
arithmetic, on calculations no run trained on?** Everything in this module was fixed, and
committed, before any run of ``format_runs``; what ran after looking is reported apart, as
exploratory.

The split (``held_out_chains``)
    The one-step calculations the problem generator can ask for (``one_step_chains``: 119 of them,
    ``a op b=c`` with the operands of + and x sorted) are split once, by operation: within each of
    + - x /, the ``HELD_OUT_SHARE`` whose salted hash is smallest are held out. No run trains on a
    problem with a held-out calculation (``training_pool``); the held-out problems
    (``held_out_problems``) are ``WORDINGS`` wordings of each held-out calculation, drawn by the
    generator, and every interval resamples calculations, not problems.
The prompts (``PROMPTS``)
    The chapter's (the question alone) and three that give the one-equation format: an
    instruction; the instruction and one worked example; the instruction and the answer sentence
    begun with the question's subject ("Omar has"). ``TRAIN_PROMPT`` is the format-given prompt
    the arms train from, chosen by ``SELECTION_RULE`` on training problems (``selection_problems``),
    never on held-out ones.
The arms and endpoints (``DESIGN``)
    GRPO with the verifier's reward, a reward for the one-equation format alone, and a random
    reward at the batch's success rate, each from ``TRAIN_PROMPT``'s start, ``SEEDS`` seeds each,
    the number from ``detectable_effect`` on the first experiment's seed spread.
"""
from __future__ import annotations

import functools
import hashlib
import math
import random
from dataclasses import asdict, dataclass, field

from grpo.lm.data import PROTOCOL, calculation_chain, make_problem, step_count

# ----------------------------------------------------------------------------- the split

HELD_OUT_SHARE = 0.4        # of each operation's one-step calculations
SPLIT_SALT = "chapter 11, held-out calculations"
WORDINGS = 4                # held-out problems per held-out calculation
WORDING_SEED = 11           # the generator that words them
SELECTION = 120             # training problems on which the training prompt is chosen
OPERATIONS = ("+", "-", "*", "/")
# the generator's knobs for every word problem in the book (make_problem's defaults)
MAX_ADD, MAX_FACTOR, MAX_VALUE = 10, 5, 30


def one_step_chains() -> tuple:
    """Every calculation a one-step problem of ``make_problem`` (default knobs) can ask for, as
    ``calculation_chain`` writes it ("3+5=8", operands of + and * sorted), sorted. Enumerated from
    the generator's rules; ``tests/test_ch11_design.py`` checks it against draws."""
    found = set()

    def add(a, op, b, c):
        if op in "+*" and b < a:
            a, b = b, a
        found.add(f"{a}{op}{b}={c}")
    for a in range(2, MAX_FACTOR + 1):                          # "has a boxes with b in each"
        for b in range(2, min(MAX_FACTOR, MAX_VALUE // a) + 1):
            add(a, "*", b, a * b)
    for x in range(2, MAX_ADD + 1):                             # "has x", then one operation
        for b in range(1, min(MAX_ADD, MAX_VALUE - x) + 1):
            add(x, "+", b, x + b)
        for b in range(1, min(MAX_ADD, x - 1) + 1):
            add(x, "-", b, x - b)
        if x <= MAX_FACTOR and 2 * x <= MAX_VALUE:
            for b in range(2, min(MAX_FACTOR, MAX_VALUE // x) + 1):
                add(x, "*", b, x * b)
        if x >= 4:
            for k in range(2, MAX_FACTOR + 1):
                if x % k == 0 and x // k <= MAX_FACTOR:
                    add(x, "/", k, x // k)
    return tuple(sorted(found))


def operation(chain: str) -> str:
    """The operation of a one-step calculation written "a op b=c"."""
    ops = [op for op in OPERATIONS if op in chain.split("=")[0]]
    if len(ops) != 1:
        raise ValueError(f"chain must be one calculation 'a op b=c', got {chain!r}")
    return ops[0]


def _rank(chain: str) -> bytes:
    return hashlib.sha256(f"{SPLIT_SALT}: {chain}".encode()).digest()


@functools.lru_cache(maxsize=1)
def held_out_chains() -> frozenset:
    """The held-out calculations: within each operation, the ``HELD_OUT_SHARE`` (rounded) of its
    one-step calculations with the smallest salted hashes."""
    held = set()
    for op in OPERATIONS:
        mine = sorted((c for c in one_step_chains() if operation(c) == op), key=_rank)
        held.update(mine[:round(HELD_OUT_SHARE * len(mine))])
    return frozenset(held)


def is_held_out(problem: dict) -> bool:
    """Whether a problem's calculation chain is one of the held-out calculations (a one-step
    chain held out; a longer chain never is)."""
    chain = calculation_chain(problem)
    return len(chain) == 1 and chain[0] in held_out_chains()


@functools.lru_cache(maxsize=1)
def held_out_problems() -> tuple:
    """``WORDINGS`` distinct wordings of each held-out calculation, drawn by ``make_problem`` from
    ``random.Random(WORDING_SEED)`` in the order drawn, then grouped by calculation (sorted). Read
    them, do not modify them."""
    rng = random.Random(WORDING_SEED)
    wordings = {c: [] for c in sorted(held_out_chains())}
    questions = set()
    while any(len(w) < WORDINGS for w in wordings.values()):
        p = make_problem(rng, 1)
        chain = calculation_chain(p)[0]
        if chain in wordings and len(wordings[chain]) < WORDINGS and p["question"] not in questions:
            questions.add(p["question"])
            wordings[chain].append(p)
    return tuple(p for c in wordings for p in wordings[c])


def chains_of(problems) -> tuple:
    """Each problem's one calculation, "a op b=c": the unit the intervals resample."""
    return tuple(calculation_chain(p)[0] for p in problems)


@functools.lru_cache(maxsize=1)
def training_pool() -> tuple:
    """What every arm trains on: the one-step problems of chapter 7's training split whose
    calculation is not held out."""
    return tuple(p for p in PROTOCOL.splits()[0] if step_count(p) == 1 and not is_held_out(p))


def training_draw(seed: int, count: int) -> list:
    """The ``count`` training problems a run of ``seed`` draws, in order: a seeded shuffle of the
    training pool."""
    pool = training_pool()
    order = random.Random(f"chapter 11 training order, seed {seed}").sample(range(len(pool)),
                                                                             count)
    return [pool[i] for i in order]


def selection_problems() -> list:
    """``SELECTION`` training-pool problems (a seeded draw) on which the training prompt is chosen:
    no held-out calculation among them."""
    pool = training_pool()
    return [pool[i] for i in random.Random("chapter 11 prompt choice").sample(range(len(pool)),
                                                                              SELECTION)]


# ----------------------------------------------------------------------------- the prompts

FORMAT_INSTRUCTION = ("Answer in one short sentence with one equation, a op b = c, whose result "
                      "is the answer.")
# The worked example of the one-shot prompt: a training-pool problem (tests check its calculation
# is not held out) answered in the one-equation format.
EXAMPLE = ("Omar has 7 shells. He buys 1 more. How many shells does Omar have now?",
           "Omar has 7 + 1 = 8 shells.")


@dataclass(frozen=True)
class Prompt:
    """How a question is put to the model: an instruction after it, worked examples before it
    (each a user turn and the assistant's answer), and whether the answer is begun with the
    question's subject ("Omar has"), which the model continues."""
    instruction: str = ""
    examples: tuple = ()
    subject_prefix: bool = False
    note: str = ""


# The second design's worked examples: one training-pool problem of each operation (tests check that
# no calculation among them is held out), each answered in the one-equation format.
EXAMPLES_PER_OPERATION = (
    EXAMPLE,
    ("Lena has 9 cards. She loses 4 of them. How many cards does Lena have now?",
     "Lena has 9 - 4 = 5 cards."),
    ("Kai has 3 boxes with 5 eggs in each. How many eggs does Kai have now?",
     "Kai has 3 * 5 = 15 eggs."),
    ("Ava has 6 coins. She splits them into 2 equal groups and keeps one. How many coins does Ava "
     "have now?", "Ava has 6 / 2 = 3 coins."))
# The same four answers, shown in the instruction without their questions (a shorter prompt).
ANSWERS_INSTRUCTION = (FORMAT_INSTRUCTION + " For example: "
                       + " ".join(answer for _, answer in EXAMPLES_PER_OPERATION))

PROMPTS = {
    "chapter": Prompt(note="the question alone (the first experiment's prompt)"),
    "instruction": Prompt(FORMAT_INSTRUCTION, note="the format, asked for"),
    "one_shot": Prompt(FORMAT_INSTRUCTION, (EXAMPLE,), note="the format, asked for and shown once"),
    "prefix": Prompt(FORMAT_INSTRUCTION, subject_prefix=True,
                     note="the format, asked for, and the answer begun with the subject"),
    "per_operation": Prompt(FORMAT_INSTRUCTION, EXAMPLES_PER_OPERATION,
                            note="the format, asked for and shown once for each operation"),
    "per_operation_prefix": Prompt(FORMAT_INSTRUCTION, EXAMPLES_PER_OPERATION, subject_prefix=True,
                                   note="the format, shown once for each operation, and the "
                                        "answer begun with the subject"),
    "operation_answers": Prompt(ANSWERS_INSTRUCTION,
                                note="the format, asked for with an answer of each operation"),
    "operation_answers_prefix": Prompt(ANSWERS_INSTRUCTION, subject_prefix=True,
                                       note="the format, asked for with an answer of each "
                                            "operation, and the answer begun with the subject"),
}
FORMAT_PROMPTS = ("instruction", "one_shot", "prefix")
FIRST_PROMPTS = ("chapter", *FORMAT_PROMPTS)      # the first design's prompts


def answer_prefix(prompt: str, question: str) -> str:
    """The text a prompt puts at the start of the answer: the question's first word and "has"
    ("Omar has") for ``subject_prefix``, else "". It carries no digit, "=" or newline, so every
    reading of an answer is the same with or without it."""
    return f"{question.split()[0]} has" if PROMPTS[prompt].subject_prefix else ""


def render_prompt(tokenizer, question: str, prompt: str) -> str:
    """The whole prompt, template included, that ``prompt`` puts to the model for ``question``:
    with ``functools.partial(render_prompt, prompt=name)`` it is ``grpo.lm.hf``'s ``render``."""
    from grpo.lm.hf import chat_prompt_text
    spec = PROMPTS[prompt]
    return (chat_prompt_text(tokenizer, question, spec.instruction, spec.examples)
            + answer_prefix(prompt, question))


# ----------------------------------------------------------------------------- the power

T80 = {1: 1.376, 2: 1.061, 3: 0.978, 4: 0.941, 5: 0.920, 6: 0.906, 7: 0.896, 8: 0.889, 9: 0.883,
       10: 0.879, 11: 0.876}    # Student's t 80% quantile (one-sided), by degrees of freedom


def detectable_effect(seed_sd: float, problem_half: float, seeds: int, power: float = 0.8) -> float:
    """The smallest true lift (points) that ``grpo.stats.paired_lift``'s 95% interval at ``seeds``
    seeds excludes from 0 with probability ``power`` (0.8): the interval's half-width
    hypot(problem_half, t975(S-1) sd / sqrt(S)) plus the 80% quantile of the estimate's error,
    hypot(z80 problem_half / 1.96, t80(S-1) sd / sqrt(S)). ``seed_sd`` is the spread of one
    seed's lift (points), ``problem_half`` the problems' bootstrap half-width (points)."""
    from grpo.stats import t975
    if power != 0.8:
        raise ValueError(f"power: only 0.8 is tabled, got {power}")
    if seeds < 2 or seed_sd < 0 or problem_half < 0:
        raise ValueError(f"need seeds >= 2, seed_sd >= 0, problem_half >= 0; got {seeds}, "
                         f"{seed_sd}, {problem_half}")
    seed_se = seed_sd / math.sqrt(seeds)
    half = math.hypot(problem_half, t975(seeds - 1) * seed_se)
    return half + math.hypot(0.8416 * problem_half / 1.96, T80[seeds - 1] * seed_se)


# ----------------------------------------------------------------------------- the design

@dataclass(frozen=True)
class Arm:
    """One arm of the design: the reward its GRPO runs are paid and the prompt they train from."""
    reward: str                     # "verifier" | "one_equation" | "random" (smollm2_runs.REWARDS)
    prompt: str
    note: str = ""


class Recorded:
    """A design as every run and the results file store it (``as_record``: its fields, in order)."""

    def as_record(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Design(Recorded):
    """The experiment, fixed before its runs (``DESIGN``; stored in the results file as is)."""
    question: str
    train_prompt: str
    arms: dict
    seeds: int
    iterations: int
    recipe: str
    primary: str
    secondary: tuple
    interval: str
    family: str
    selection_rule: str
    pass_at_k: tuple
    pass_at_k_samples: int
    pass_at_k_arm: str
    budget_cpu_h: float             # the CPU-hours all the runs may take
    power: dict = field(default_factory=dict)    # power_record: the seeds' count, and why
    exploratory: str = ""           # what counts as exploratory


# The power calculation's inputs, from the first experiment's stored runs (``smollm2_runs``: five
# GRPO seeds on 200 held-out problems; ``tests/test_ch11_design.py`` recomputes both): the spread
# of one seed's first-equation lift, and the problems' bootstrap half-width of that lift.
FIRST_EXPERIMENT_SEED_SD = 6.5
FIRST_EXPERIMENT_PROBLEM_HALF = 7.3
TARGET_EFFECT = 15.0        # points: the first experiment's whole last-number lift (+15.4)
SEEDS = 6                   # the smallest count whose detectable effect is under TARGET_EFFECT
TRAIN_PROMPT = "prefix"     # SELECTION_RULE on the stored selection run (a test re-applies it)
PASS_K_SEED = 4321
SELECTION_RULE = ("the format-given prompt whose greedy last number is right most often on the "
                  f"{SELECTION} selection problems (training problems, none held out)")


def recipe():
    """The first experiment's recipe (``smollm2_runs.RECIPE``), unchanged: every arm differs from
    it only in its prompt and its reward."""
    from grpo.experiments.ch11_pretrained.smollm2_runs import RECIPE
    return RECIPE


def power_record(seed_sd: float, problem_half: float, source: str, target: float, seeds: int,
                 limit: str) -> dict:
    """A design's power calculation as its record stores it: the inputs (``detectable_effect``'s,
    and where they come from), the effect detectable at 80% power for 3 to 10 seeds and at the
    chosen ``seeds``, against the ``target`` effect."""
    def detectable(s):
        return round(detectable_effect(seed_sd, problem_half, s), 1)
    return {"seed_sd_points": seed_sd, "problem_half_points": problem_half, "from": source,
            "power": 0.8, "target_points": target,
            "detectable_points_by_seeds": {s: detectable(s) for s in range(3, 11)},
            "chosen_seeds": seeds, "detectable_points": detectable(seeds), "limit": limit}


def power_table(seeds=range(3, 11)) -> dict:
    """Seeds -> the first-equation lift (points) the design detects with 80% power."""
    return {s: round(detectable_effect(FIRST_EXPERIMENT_SEED_SD, FIRST_EXPERIMENT_PROBLEM_HALF,
                                       s), 1) for s in seeds}


DESIGN = Design(
    question="Once the one-equation format is given for free, does GRPO with the verifier's reward "
             "make SmolLM2-135M's arithmetic (the first equation's result) right more often, on "
             "calculations no run trained on?",
    train_prompt=TRAIN_PROMPT,
    arms={"grpo": Arm("verifier", TRAIN_PROMPT, "GRPO, the verifier's reward (the last number), "
                                               "from the format-given prompt"),
          "format_reward": Arm("one_equation", TRAIN_PROMPT,
                               "a reward for the one-equation format alone, blind to the answer, "
                               "from the format-given prompt"),
          "random_reward": Arm("random", TRAIN_PROMPT,
                               "a reward paid at random at the batch's success rate, from the "
                               "format-given prompt"),
          "grpo_chapter_prompt": Arm("verifier", "chapter",
                                     "GRPO, the verifier's reward, from the chapter's prompt (the "
                                     "first experiment's runs, on this split)")},
    seeds=SEEDS,
    iterations=10,
    recipe="smollm2_runs.RECIPE: 4 prompts x G 8 an iteration, T 1, 64 new tokens, beta 0.04, "
           "Adam lr 1e-5, 10 iterations; prompts drawn from the training pool by seed, the same "
           "for every arm at a seed",
    primary="first-equation share on the held-out calculations, greedy, GRPO (the 'grpo' arm) "
            "paired with the start under the same prompt; 95% interval resampling calculations, "
            "with the seeds' t-term (grpo.stats.paired_lift)",
    secondary=("last-number lift of 'grpo' over its start",
               "last-number lift of 'grpo' beyond the best format-given start (the format-given "
               "prompt whose start is right most often on the held-out problems)",
               "the gap: 'grpo''s last-number lift minus its first-equation lift",
               "'grpo' minus 'format_reward', first equation, seed paired with seed",
               "'grpo' minus 'random_reward', first equation, seed paired with seed",
               "pass@1 lift of 'grpo' over its start (16 samples of each calculation's first "
               "wording)",
               "pass@16 lift of 'grpo' over its start",
               "last-number lift of 'grpo_chapter_prompt' beyond the best format-given start"),
    interval="95%, paired, calculations resampled (grpo.stats.paired_lift with clusters), plus a "
             "t-interval over the seeds in quadrature",
    family="the eight secondary endpoints, Holm-corrected together; the primary alone at 0.05",
    selection_rule=SELECTION_RULE,
    pass_at_k=(1, 2, 4, 8, 16),
    pass_at_k_samples=16,
    pass_at_k_arm="grpo",
    budget_cpu_h=6.0,
    power=power_record(FIRST_EXPERIMENT_SEED_SD, FIRST_EXPERIMENT_PROBLEM_HALF,
                       "the first experiment's five GRPO seeds, first-equation lift on its 200 "
                       "held-out problems (47 calculations)", TARGET_EFFECT, SEEDS,
                       "the problems' half-width alone keeps the detectable effect above about 10 "
                       "points at any seed count: 48 held-out calculations is most of what "
                       "one-step arithmetic offers (119 calculations in all)"),
    exploratory="anything run or computed after the runs were seen is labelled exploratory where "
                "it is reported",
)



# ============================================================================= the second design
#
# Chapter 11's second decided experiment (issue 59), fixed and committed before any of its runs
# (``four_way_runs``). The first design's primary, the first equation's result, counted an answer
# that wrote an equation at all; its prompt gave the format to half the answers; its runs saw 40
# questions. This design reads every answer four ways (``grpo.lm.verifier.read_calculation``:
# no equation, another calculation, a slip, right), starts from a prompt chosen to give the format
# without choosing the calculation, and trains as long as a pilot on training problems says the
# training reward still rises, within the budget.
#
# The order it runs in, each step by a rule written here before the step:
#   1. the selection: every candidate prompt's greedy answers on the selection problems (training
#      problems), read four ways; SECOND_SELECTION_RULE chooses the prompt (``four_way_prompt``);
#   2. the pilot: one GRPO run from that prompt on training problems (PILOT_SEED, no design seed),
#      PILOT_ITERATIONS long; ITERATION_RULE turns its training reward into the runs' length,
#      capped by BUDGET_RULE on the pilot's and the start's measured CPU (``four_way_iterations``);
#   3. the start and the arms' runs, seeds FOUR_WAY_SEEDS, with held-out checkpoints.

CANDIDATES = ("instruction", "one_shot", "prefix", "per_operation", "per_operation_prefix",
              "operation_answers", "operation_answers_prefix")
FORMAT_FLOOR = 0.90             # the least share of one-equation answers a chosen prompt gives
CALCULATION_DROP = 0.03         # the most its (c)+(d) share may fall below the question alone's
SECOND_SELECTION_RULE = (
    f"on the {SELECTION} selection problems (training problems), greedy: a candidate qualifies "
    f"when at least {FORMAT_FLOOR:.2f} of its answers take the one-equation format and its share "
    "writing the problem's calculation first ((c) slip + (d) right) is no more than "
    f"{CALCULATION_DROP:.2f} below the question alone's; of those that qualify, the one with the "
    "fewest prompt tokens (their mean over the selection problems; every qualifying prompt gives "
    "the format and leaves the calculation to the model, and a shorter prompt buys more "
    "iterations within the budget), ties to the higher one-equation share. If none qualifies: the "
    "candidate with the highest one-equation share among those within the calculation drop, and "
    "failing that the highest one-equation share, reported as not meeting the rule")

PILOT_SEED = 100                # no design seed: the pilot's prompts are its own draw
PILOT_ITERATIONS = 40
PILOT_WINDOW = 10               # iterations a window of the training reward averages
PILOT_RISE = 0.02               # a window rises when its mean beats the one before by more
MIN_ITERATIONS = 20
ITERATION_RULE = (
    f"the pilot (GRPO with the verifier's reward from the chosen prompt, seed {PILOT_SEED}, "
    f"{PILOT_ITERATIONS} iterations on training problems) averages its training reward (the "
    f"verifier's mean over each iteration's answers) in windows of {PILOT_WINDOW} iterations; the "
    f"runs last to the end of the first window whose mean is not more than {PILOT_RISE} above the "
    f"window before it (the training reward stopped rising there), at least {MIN_ITERATIONS}, and "
    f"{PILOT_ITERATIONS} when every window rises; then at most the budget's cap (BUDGET_RULE)")

FOUR_WAY_BUDGET_CPU_H = 8.0
BUDGET_RULE = (
    f"the selection, the pilot, the start and every run fit {FOUR_WAY_BUDGET_CPU_H:.0f} CPU-hours: "
    "after the selection, the pilot and the start, the runs' length is the largest multiple of "
    f"{PILOT_WINDOW} whose runs fit what is left, costed at the pilot's CPU-seconds per iteration "
    "and the start's CPU-seconds per held-out evaluation (model loading included); the "
    "intermediate checkpoints are dropped before the length falls below "
    f"{MIN_ITERATIONS}, and seeds are never dropped")

# The power calculation's inputs, from the first design's stored runs (its 'grpo' arm, six seeds on
# the 192 held-out problems, read four ways; tests/test_ch11_design.py recomputes both): the spread
# of one seed's lift in share (d), and the calculations' bootstrap half-width of that lift.
FIRST_DESIGN_RIGHT_SEED_SD = 4.2
FIRST_DESIGN_RIGHT_PROBLEM_HALF = 4.9
FOUR_WAY_TARGET = 10.0          # points of share (d): a tenth of the answers
FOUR_WAY_SEEDS = 5              # the smallest count whose detectable effect is at most the target


def four_way_power_table(seeds=range(3, 11)) -> dict:
    """Seeds -> the lift in share (d) (points) the second design detects with 80% power."""
    return {s: round(detectable_effect(FIRST_DESIGN_RIGHT_SEED_SD,
                                       FIRST_DESIGN_RIGHT_PROBLEM_HALF, s), 1) for s in seeds}


def checkpoints(iterations: int, intermediate: bool = True) -> tuple:
    """The iterations after which a 'grpo' run is scored on the held-out problems: 10 and 20 (when
    ``intermediate`` and within the run) and its last."""
    marks = {10, 20} if intermediate else set()
    return tuple(sorted(m for m in marks | {iterations} if m <= iterations))


@dataclass(frozen=True)
class FourWayDesign(Recorded):
    """The second experiment, fixed before its runs (``FOUR_WAY_DESIGN``; stored in every run and
    in the results file as is). The prompt and the length are rules here; their outcomes,
    ``FOUR_WAY_PROMPT`` and ``FOUR_WAY_ITERATIONS``, are written below once the rules are
    applied, and tests re-apply the rules to the stored selection and pilot."""
    question: str
    readings: dict
    candidates: tuple
    selection_rule: str
    arms: dict
    seeds: int
    pilot: dict
    iteration_rule: str
    budget_rule: str
    checkpoints: str
    recipe: str
    primary: str
    secondary: tuple
    descriptive: str
    interval: str
    family: str
    budget_cpu_h: float             # BUDGET_RULE's budget, selection, pilot and start included
    power: dict = field(default_factory=dict)    # power_record for share (d)
    exploratory: str = ""


FOUR_WAY_DESIGN = FourWayDesign(
    question="With the one-equation format really given, does GRPO change which calculation "
             "SmolLM2-135M writes, or how well it does it, on calculations no run trained on, and "
             "does that grow with training?",
    readings={"no_equation": "(a) the answer writes no equation",
              "other_calculation": "(b) its first equation is another calculation than the "
                                   "problem's, true or false",
              "slip": "(c) its first equation is the problem's calculation with a false result",
              "right": "(d) its first equation is the problem's calculation, true",
              "reader": "grpo.lm.verifier.read_calculation (operands of + and * in either order)"},
    candidates=CANDIDATES,
    selection_rule=SECOND_SELECTION_RULE,
    arms={"grpo": Arm("verifier", "four_way_prompt",
                      "GRPO, the verifier's reward (the last number), from the chosen prompt"),
          "random_reward": Arm("random", "four_way_prompt",
                               "a reward paid at random at the batch's success rate, from the "
                               "chosen prompt")},
    seeds=FOUR_WAY_SEEDS,
    pilot={"seed": PILOT_SEED, "iterations": PILOT_ITERATIONS, "window": PILOT_WINDOW,
           "rise": PILOT_RISE, "min_iterations": MIN_ITERATIONS,
           "problems": "training_draw(PILOT_SEED): the training pool, none held out"},
    iteration_rule=ITERATION_RULE,
    budget_rule=BUDGET_RULE,
    checkpoints="'grpo' runs: greedy on the held-out problems after iterations 10, 20 and the "
                "last; 'random_reward' runs: after the last",
    recipe="smollm2_runs.RECIPE (4 prompts x G 8 an iteration, T 1, 64 new tokens, beta 0.04, Adam "
           "lr 1e-5) for the rules' number of iterations; prompts drawn from the training pool by "
           "seed (training_draw), the same for both arms at a seed",
    primary="the change in share (d), right, from the start to 'grpo' at its last iteration: "
            "greedy on the 192 held-out problems (48 held-out calculations), paired with the "
            "start under the same prompt",
    secondary=("the change in (c)+(d), the problem's calculation written first, 'grpo' over the "
               "start",
               "the change in (c), slips, 'grpo' over the start",
               "the change in (a), no equation, 'grpo' over the start",
               "the change in the last number right (what the verifier pays), 'grpo' over the "
               "start",
               "'grpo' minus 'random_reward' in share (d), seed paired with seed"),
    descriptive="the four shares of the start, of 'grpo' at each checkpoint and of "
                "'random_reward' at the end, each change with its interval; outside the family",
    interval="95%, paired, the held-out calculations resampled (grpo.stats.paired_lift with "
             "clusters), plus a t-interval over the seeds in quadrature",
    family="the five secondary endpoints, Holm-corrected together; the primary alone at 0.05",
    budget_cpu_h=FOUR_WAY_BUDGET_CPU_H,
    power=power_record(FIRST_DESIGN_RIGHT_SEED_SD, FIRST_DESIGN_RIGHT_PROBLEM_HALF,
                       "the first design's six 'grpo' seeds, their lift in share (d) on its 192 "
                       "held-out problems (48 calculations), read four ways", FOUR_WAY_TARGET,
                       FOUR_WAY_SEEDS, "the calculations' half-width alone keeps the detectable "
                       "effect above about 7 points at any seed count"),
    exploratory="anything run or computed after the runs were seen is labelled exploratory where "
                "it is reported",
)

# The rules' outcomes, written once each rule has been applied (tests re-apply them): None until
# then, and no run of an arm starts before both are set.
# SECOND_SELECTION_RULE on the stored selection runs: per_operation and per_operation_prefix
# qualify (0.992 one-equation answers; (c)+(d) 0.700 against the question alone's 0.717), and
# per_operation is the shorter.
FOUR_WAY_PROMPT = "per_operation"
# ITERATION_RULE on the stored pilot: its training reward, in windows of 10 iterations, 0.500,
# 0.659, 0.850, 0.691: it first failed to rise in the fourth window, so the rule asks for 40.
# BUDGET_RULE on the pilot's 63.7 CPU-s an iteration and the start's 415.9 CPU-s an evaluation,
# after 4,249 CPU-s spent: 20 iterations with the checkpoints at 10 and 20 fit (18,980 CPU-s
# planned), 30 with them do not, so the runs last 20 iterations and keep both checkpoints.
FOUR_WAY_ITERATIONS = 20
FOUR_WAY_INTERMEDIATE = True    # whether the budget kept the checkpoints at 10 and 20
