"""Chapter 11's second design read after its runs were seen (issue 70's audit; exploratory,
outside the design's family), from the stored texts: where the (d) lift sits by operation and by
wording, the "gives" problems' operators, the comparison with the question alone, 10 to 20
iterations, the pilot, each endpoint with one seed left out, the prompt's cost on the selection
problems; and the committed design record, held to its commit."""
import hashlib
import json

import numpy as np
import pytest

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained import four_way_runs as W

# sha256 of the canonical JSON (sorted keys, no spaces, ASCII) of design.FOUR_WAY_DESIGN's record
# as committed before the runs, at commit 5a638f6; computed there with git once, so this test needs
# no history.
COMMITTED_DESIGN_SHA256 = "02965ce17c916e07c2d5d1467bda83988a00815109864ea0682d1e875764794e"


def _digest(record: dict) -> str:
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _rounded(x, digits=1):
    return (round(x.points, digits), *(round(v, digits) for v in x.ci95))


def test_the_committed_design_is_the_record_at_its_commit_and_the_runs_store_it():
    record = W.committed_design()
    assert _digest(record) == COMMITTED_DESIGN_SHA256
    assert _digest(W.load_run("start")["design"]) == COMMITTED_DESIGN_SHA256
    record["primary"] = "the change in share (d): +27.3 points"     # a result written over it
    assert _digest(record) != COMMITTED_DESIGN_SHA256
    assert W.committed_design()["primary"].startswith("the change in share (d), right, from")


def test_the_held_out_problems_group_by_operation_and_by_their_gives_wording():
    ops, words = W.held_out_groups("operation"), W.held_out_groups("wording")
    assert {g: ops.count(g) for g in D.OPERATIONS} == {"+": 88, "-": 72, "*": 16, "/": 16}
    assert {g: words.count(g) for g in set(words)} == {"X gives him N": 43, "X gives N to Y": 39,
                                                       "other": 110}
    assert {o for o, w in zip(ops, words) if w == "X gives him N"} == {"+"}
    assert {o for o, w in zip(ops, words) if w == "X gives N to Y"} == {"-"}
    with pytest.raises(ValueError, match="by must be"):
        W.held_out_groups("length")


@pytest.fixture(scope="module")
def by_operation():
    return W.gain_by_group("operation")


@pytest.fixture(scope="module")
def by_wording():
    return W.gain_by_group("wording")


def test_addition_carries_most_of_the_lift_in_share_d(by_operation):
    """Issue 70: addition 33% -> 83% (+22.7 of +27.3 points), subtraction 47% -> 58%,
    multiplication 100% -> 100%, division 0% -> 6% (start of the chosen prompt -> GRPO at 20)."""
    g = by_operation
    assert list(g.shares) == ["question_alone", "start", "grpo_10", "grpo_20", "random_reward_20"]
    right = {c: {op: round(s.shares[op]["right"], 3) for op in D.OPERATIONS}
             for c, s in g.shares.items()}
    assert right["start"] == {"+": 0.330, "-": 0.472, "*": 1.0, "/": 0.0}
    assert right["grpo_20"] == {"+": 0.825, "-": 0.581, "*": 1.0, "/": 0.062}
    change = g.from_start["grpo_20"]
    assert round(change.whole["right"], 1) == 27.3
    assert {op: round(change.carried[op]["right"], 1) for op in D.OPERATIONS} == {
        "+": 22.7, "-": 4.1, "*": 0.0, "/": 0.5}
    assert set(g.from_start) == {"grpo_10", "grpo_20", "random_reward_20"}
    assert "start" in g.from_question_alone and g.label.startswith("exploratory")
    for ch in (*g.from_start.values(), *g.from_question_alone.values()):
        for k in W.CALCULATION_READINGS:
            assert sum(c[k] for c in ch.carried.values()) == pytest.approx(ch.whole[k])


def test_the_two_gives_wordings_carry_eighteen_points_and_the_prompt_had_turned_one_around(
        by_wording):
    """Issue 70: the "gives" templates (82 of 192 problems) carry +17.9 points; "X gives him N"
    was right 35% asked alone, 5% under the chosen prompt, 73% after GRPO."""
    g, gift, give = by_wording, "X gives him N", "X gives N to Y"
    carried = g.from_start["grpo_20"].carried
    assert round(carried[gift]["right"] + carried[give]["right"], 1) == 17.9
    assert [round(g.shares[c].shares[gift]["right"], 3) for c in
            ("question_alone", "start", "grpo_20")] == [0.349, 0.047, 0.730]
    assert g.shares["start"].sizes[gift] + g.shares["start"].sizes[give] == 82


def test_on_the_gives_problems_some_seeds_write_one_operator_for_both_directions():
    """Issue 70: the chosen prompt wrote "-" on 70% of "X gives him N"; at 20 iterations seeds 1
    and 2 write "+" on 82-87% of "X gives N to Y", seed 0 "-" on 58% of "X gives him N"; only
    seeds 3 and 4 write each direction's operator on most of its problems."""
    ops, gift, give = W.gives_operators(), "X gives him N", "X gives N to Y"
    assert round(ops["start"][gift]["-"], 2) == 0.70
    assert [round(ops[f"grpo_seed{s}"][give]["+"], 2) for s in (1, 2)] == [0.82, 0.87]
    assert round(ops["grpo_seed0"][gift]["-"], 2) == 0.58
    apart = [s for s in range(D.FOUR_WAY_SEEDS)
             if ops[f"grpo_seed{s}"][gift]["+"] > 0.5 and ops[f"grpo_seed{s}"][give]["-"] > 0.5]
    assert apart == [3, 4]
    for run in ops.values():
        for shares in run.values():
            assert sum(shares.values()) == pytest.approx(1)


@pytest.mark.parametrize("text, operator", [("Mia has 3 + 4 = 7 eggs.", "+"), ("8 − 3 = 5", "-"),
                                            ("2 + 3 + 4 = 9", "several"), ("seven", "none"),
                                            ("4 x 2 = 8, then 8 - 1 = 7", "*")])
def test_the_first_operator_is_the_first_equations(text, operator):
    assert W.first_operator(text) == operator


def test_against_the_question_alone_the_fall_in_other_calculations_is_not_told_from_zero():
    """Issue 70: against the question alone, GRPO's (b) -5.9 [-14.6, +2.8], its (d) +16.4, part
    of it the (a) the prompt removed; against its own start (b) fell 18.4 points."""
    got = {k: W.against_question_alone(k) for k in ("no_equation", "other_calculation", "slip",
                                                     "right", "calculation")}
    assert _rounded(got["other_calculation"]) == (-5.9, -14.6, 2.8)
    assert round(got["right"].points, 1) == 16.4 and got["right"].seeds == 5
    assert _rounded(got["no_equation"]) == (-10.6, -16.4, -4.9)
    assert sum(got[k].points for k in W.CALCULATION_READINGS) == pytest.approx(0, abs=1e-9)
    assert got["calculation"].points == pytest.approx(got["slip"].points + got["right"].points)
    assert round(W.change("grpo", "other_calculation").points, 1) == -18.4


def test_from_ten_to_twenty_iterations_share_d_moved_less_than_its_interval():
    """Issue 70: (d) +2.7 [-5.7, +11.2]; (c)+(d) +3.1 [-4.1, +10.3] (ours -4.05, printed -4.0)."""
    assert _rounded(W.checkpoint_change("right")) == (2.7, -5.7, 11.2)
    calc = W.checkpoint_change("calculation")
    assert _rounded(calc, 2) == (3.12, -4.05, 10.3)
    assert calc.seeds == 5 and calc.per_seed == pytest.approx(
        [100 * (W.outcome(n, "calculation", 20) - W.outcome(n, "calculation", 10)).mean()
         for n in W.runs_of_arm("grpo")])
    for since in (20, 5):
        with pytest.raises(ValueError, match="since"):
            W.checkpoint_change("right", since)


def test_the_pilots_reward_fell_in_its_last_window():
    """Issue 70: 0.850 -> 0.691 in iterations 31-40."""
    windows = W.pilot_windows(W.load_run("pilot")["log"])
    assert [round(w, 3) for w in windows] == [0.5, 0.659, 0.85, 0.691]


def test_with_one_seed_left_out_the_primary_holds_and_some_secondaries_do_not():
    """Issue 70: (c)+(d)'s Holm p passes 0.05 when seed 0, 3 or 4 is left out; GRPO minus the
    random reward does for 4 of the 5 seeds left out."""
    out = W.leave_one_seed_out()
    assert list(out) == list(range(D.FOUR_WAY_SEEDS))
    assert all(list(v) == ["primary", *W.SECONDARY] for v in out.values())
    assert all(v["primary"].holds and v["primary"].survives for v in out.values())
    assert [s for s, v in out.items() if not v["calculation"].holds] == [0, 3, 4]
    assert [s for s, v in out.items() if not v["right_minus_random"].holds] == [0, 2, 3, 4]
    assert all(v["slip"].survives and v["no_equation"].survives for v in out.values())
    without0 = W.four_way_endpoints(seeds=(1, 2, 3, 4))
    assert out[0]["calculation"].lift == without0.secondary["calculation"]
    assert out[0]["calculation"].p == without0.holm_p["calculation"] > 0.05
    assert out[0]["primary"].lift.seeds == 4


@pytest.mark.parametrize("seeds", [(0,), (0, 0), (0, 7), ()])
def test_a_seed_subset_names_two_or_more_of_the_designs_seeds(seeds):
    with pytest.raises(ValueError, match="seeds"):
        W.runs_of_arm("grpo", seeds)


def test_on_the_selection_problems_the_prompt_kept_c_plus_d_only_by_giving_equations():
    """Issue 70: on the selection problems the chosen prompt's (b) rose 0.19 -> 0.29 while (c)+(d)
    held only because answers with no equation became equations."""
    ch = W.selection_change()
    assert round(ch.before.overall["other_calculation"], 2) == 0.19
    assert round(ch.after.overall["other_calculation"], 2) == 0.29
    calc = {g: c["slip"] + c["right"] for g, c in ch.carried.items()}
    whole = ch.whole["slip"] + ch.whole["right"]
    assert round(whole, 1) == -1.7 and round(calc["no_equation"], 1) == 5.8
    assert round(ch.carried["right"]["other_calculation"], 1) == 10.8       # right ones lost to (b)
    assert whole - calc["no_equation"] < -7
    assert np.isclose(sum(calc.values()), whole)


def test_the_results_file_keeps_the_committed_design_verbatim_beside_the_results():
    """data/results/11_pretrained.json stores the design as committed under its own key, never
    overwritten by a result, and the results under another."""
    import json
    from pathlib import Path
    stored = json.loads((Path(__file__).resolve().parents[1] / "data" / "results"
                         / "11_pretrained.json").read_text())
    assert _digest(stored["four_way_design"]) == COMMITTED_DESIGN_SHA256
    assert not set(stored["four_way"]) & set(stored["four_way_design"])


def test_the_answer_says_how_far_the_prompt_had_lowered_its_start():
    by_op = W.gain_by_group("operation")
    answer = W.four_way_answer(W.four_way_endpoints(), by_op, W.gain_by_group("wording"),
                               W.gives_operators()["start"], W.against_question_alone(
                                   "other_calculation"), W.checkpoint_change("right"), (10, 20))
    assert "a start the examples had lowered by 10.9 points from the model asked alone" in answer.gain


def test_the_live_runs_reading_line_counts_each_bin():
    read = {"four_way": np.array(["right", "slip", "right", "no_equation"]),
            "one_equation_format": np.array([1, 1, 0, 0]), "last_number": np.array([1, 0, 1, 1])}
    assert W.reading_line(read, [10, 20, 30, 40]) == (
        "25 tokens on average; one-equation form 2/4; (a) 1, (b) 0, (c) 1, (d) 2; "
        "last number right 3/4")
