"""The problem generator, the verifier and the jsonl loaders of lib/grpo/lm/data.py."""
import json
import random
from fractions import Fraction

import pytest

from grpo.lm.data import (answer_only, load_gsm8k, load_gsm8k_hf, make_problem, make_splits, read_jsonl,
                          write_jsonl)
from grpo.lm.verifier import (check_annotations, extract_answer, normalize_number, reference_answer, reward,
                              safe_arith)


@pytest.mark.parametrize("text, expected", [
    ("so 72 clips\n#### 72", "72"),
    ("#### 1,200", "1200"),
    ("#### $1,200 dollars.", "1200"),
    ("#### -3.50", "-3.5"),
    ("#### \u22124", "-4"),
    ("#### 12.0", "12"),
    ("#### 72.", "72"),
    ("#### 5 apples", "5"),
    ("#### 0", "0"),
    ("#### -0", "0"),
    ("first #### 3\nthen #### 4", "4"),
    ("#### 123456789012345678901234567890", "123456789012345678901234567890"),
])
def test_extract_answer_reads_gsm8k_numbers(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize("text", [
    "", "no marker 42", "####", "#### abc", "#### \u0667\u0662", "#### \uff17\uff12", "#### 1e5",
    "#### the answer is 5", "#### " + "9" * 100, None, 42, b"#### 1", ["#### 1"],
])
def test_extract_answer_gives_none_on_malformed(text):
    assert extract_answer(text) is None


def test_normalize_number():
    assert normalize_number("007") == "7"
    assert normalize_number("2.500") == "2.5"
    assert normalize_number("1.2.3") is None
    assert normalize_number("") is None


@pytest.mark.parametrize("completion, answer, r", [
    ("a\n#### 72", "x <<48+24=72>>72\n#### 72", 1.0),
    ("#### 72.0", "#### 72", 1.0),
    ("#### 71", "#### 72", 0.0),
    ("72", "#### 72", 0.0),                    # no #### line: format error scores 0
    ("#### 72", 72, 1.0),                      # the reference may be a bare number
    ("#### 72", "72", 1.0),
    (None, "#### 72", 0.0),
    ("#### __import__('os').system('true')", "#### 0", 0.0),
    ("#### 1" * 10000, "#### 1", 1.0),
    ("#### 72", None, 0.0),
])
def test_reward(completion, answer, r):
    assert reward(completion, answer) == r


def test_safe_arith_is_exact():
    assert safe_arith("48/2") == 24
    assert safe_arith("(1+2)*3-4/8") == Fraction(17, 2)
    assert safe_arith("-3*-2") == 6
    assert safe_arith("1,200+0.5") == Fraction(2401, 2)
    assert safe_arith("0.1+0.2") == Fraction(3, 10)


@pytest.mark.parametrize("expr", [
    "__import__('os').system('echo pwned')", "open('x')", "2**3", "1/0", "a+1", "1+", "(1+2", "1 2",
    "", "()", "lambda: 1", "1;2", "9" * 80, "(" * 30 + "1" + ")" * 30, "1+" * 150 + "1",
])
def test_safe_arith_rejects_anything_else(expr, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError):
        safe_arith(expr)
    assert list(tmp_path.iterdir()) == []      # nothing was executed


def test_check_annotations():
    out = check_annotations("She sold 48/2=<<48/2=24>>24. Then <<47+14=48>>48. Bad <<os.system(1)=0>>.")
    assert [a["ok"] for a in out] == [True, False, False]
    assert out[1]["value"] == 61 and out[2]["value"] is None
    assert check_annotations(None) == [] and check_annotations("no annotations") == []


def test_generator_is_deterministic_and_splits_disjoint():
    a = make_splits(300, 100, seed=3)
    b = make_splits(300, 100, seed=3)
    assert a == b
    assert make_splits(300, 100, seed=4) != a
    train, test = a
    assert len(train) == 300 and len(test) == 100
    assert not {p["question"] for p in train} & {p["question"] for p in test}
    assert len({p["question"] for p in test}) == 100


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_every_worked_solution_verifies(steps):
    rng = random.Random(steps)
    for _ in range(300):
        p = make_problem(rng, steps)
        anns = check_annotations(p["answer"])
        assert len(anns) == steps and all(a["ok"] for a in anns), p
        assert reward(p["answer"], p["answer"]) == 1.0
        final = int(extract_answer(p["answer"]))
        assert anns[-1]["value"] == final and 0 <= final <= 30
        assert p["answer"].splitlines()[-1] == f"#### {final}"


def test_difficulty_knobs_bound_the_numbers():
    rng = random.Random(0)
    for _ in range(300):
        p = make_problem(rng, 4, max_add=20, max_factor=9, max_value=100)
        assert all(0 <= a["value"] <= 100 for a in check_annotations(p["answer"]))


@pytest.mark.parametrize("kwargs", [dict(steps=0), dict(steps=5), dict(steps=2, max_add=1),
                                    dict(steps=2, max_value=9)])
def test_generator_bad_input(kwargs):
    with pytest.raises(ValueError):
        make_problem(random.Random(0), **kwargs)
    with pytest.raises(ValueError):
        make_splits(-1, 10)


def test_jsonl_round_trip_and_gsm8k_loader(tmp_path):
    train, test = make_splits(20, 5, seed=0)
    write_jsonl(test, tmp_path / "gsm8k" / "test.jsonl")
    assert read_jsonl(tmp_path / "gsm8k" / "test.jsonl") == test
    assert load_gsm8k("test", tmp_path / "gsm8k") == test
    official = {"question": "Natalia sold clips to 48 of her friends in April, and then she sold half "
                "as many clips in May. How many clips did Natalia sell altogether in April and May?",
                "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = "
                "<<48+24=72>>72 clips altogether in April and May.\n#### 72"}
    (tmp_path / "gsm8k" / "train.jsonl").write_text(json.dumps(official) + "\n\n")
    rows = load_gsm8k("train", tmp_path / "gsm8k")
    assert rows == [official] and extract_answer(rows[0]["answer"]) == "72"
    assert all(a["ok"] for a in check_annotations(rows[0]["answer"]))


def test_gsm8k_loaders_fail_clearly_offline(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="grade-school-math"):
        load_gsm8k("test", tmp_path)
    with pytest.raises(ValueError):
        load_gsm8k("validation", tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="download"):
        load_gsm8k_hf("test")
    (tmp_path / "bad.jsonl").write_text('{"question": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_jsonl(tmp_path / "bad.jsonl")


def test_answer_only_keeps_the_question_and_the_final_number():
    problems = make_splits(20, 5, seed=3)[0]
    short = answer_only(problems)
    for p, q in zip(problems, short):
        assert q["question"] == p["question"] and q["answer"] == "#### " + extract_answer(p["answer"])
        assert reward(p["answer"], q["answer"]) == 1.0 and reward(q["answer"], p["answer"]) == 1.0
    assert problems[0]["answer"].count("\n") >= 1                     # the input is not modified
    assert answer_only([{"question": "q", "answer": "so #### 1,200"}])[0]["answer"] == "#### 1200"
    with pytest.raises(ValueError, match="####"):
        answer_only([{"question": "q", "answer": "no final line"}])


@pytest.mark.parametrize("answer, ref", [("x <<2+2=4>>4\n#### 4", "4"), ("#### 1,200", "1200"), (72, "72"),
                                         ("72", "72"), ("#### -0", "0")])
def test_reference_answer_reads_a_reference(answer, ref):
    assert reference_answer(answer) == ref


@pytest.mark.parametrize("answer", ["#### seventy", "no number", None, "#### " + "9" * 80, "", "#### "])
def test_an_unreadable_reference_is_an_error_not_a_silent_zero(answer):
    with pytest.raises(ValueError, match="reference answer has no readable number"):
        reference_answer(answer)
    assert reward("#### 7", answer) == 0.0           # reward itself still never raises


def test_a_masked_question_is_its_template_and_numbers():
    from grpo.lm.data import masked_question
    a = ("Sam has 10 stamps. Ines gives him 1 stamps. He gives 6 stamps to Ines. "
         "How many stamps does Sam have now?")
    b = "Ava has 10 cards. Mia gives her 1 cards. She gives 6 cards to Mia. How many cards does Ava have now?"
    c = "Ava has 10 cards. Mia gives her 2 cards. She gives 6 cards to Mia. How many cards does Ava have now?"
    mask = masked_question
    assert mask({"question": a}) == mask({"question": b}) != mask({"question": c})
    assert masked_question({"question": "Then she gets 3 times as many."}) == "Then _ gets 3 times as many."


def test_reword_keeps_the_masked_question_and_changes_the_words():
    from grpo.lm.data import PROTOCOL, reword
    from grpo.lm.data import masked_question
    rng = random.Random(0)
    for p in PROTOCOL.splits()[0][:300]:
        q = reword(p, rng)
        assert masked_question(q) == masked_question(p) and q["question"] != p["question"]
        assert extract_answer(q["answer"]) == extract_answer(p["answer"])
        assert all(a["ok"] for a in check_annotations(q["answer"]))


def test_no_held_out_problem_is_a_training_problem_reworded():
    """PROTOCOL splits by masked question: no test or further held-out problem is a training
    problem reworded (the question split did not: most of its held-out problems had a training
    twin)."""
    from grpo.lm.data import PROTOCOL, make_splits
    from grpo.lm.data import masked_question
    train, test = PROTOCOL.splits()
    seen = {masked_question(p) for p in train}
    assert not seen & {masked_question(p) for p in test + PROTOCOL.held_out(2000)}
    old_train, old_test = make_splits(PROTOCOL.n_train, PROTOCOL.n_test, PROTOCOL.seed, PROTOCOL.step_weights,
                                      by="question")
    old_seen = {masked_question(p) for p in old_train}
    assert sum(masked_question(p) in old_seen for p in old_test) > 0.4 * len(old_test)
    with pytest.raises(ValueError, match="by must be one of"):
        make_splits(10, 2, by="name")


def test_held_out_is_disjoint_and_leaves_the_splits_alone():
    from grpo.lm.data import PROTOCOL, make_splits
    train, test = PROTOCOL.splits()
    extra = PROTOCOL.held_out(300)
    assert len(extra) == 300
    seen = {p["question"] for p in train} | {p["question"] for p in test}
    assert not seen & {p["question"] for p in extra} and len({p["question"] for p in extra}) == 300
    bigger_train, bigger_test = make_splits(PROTOCOL.n_train, PROTOCOL.n_test + 300, PROTOCOL.seed,
                                            PROTOCOL.step_weights)
    assert bigger_train == train and bigger_test[:PROTOCOL.n_test] == test
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError):
            PROTOCOL.held_out(bad)


def test_strict_reward_and_step_count():
    from grpo.lm.data import make_problem, step_count
    from grpo.lm.verifier import strict_reward
    for steps in (1, 2, 3, 4):
        p = make_problem(random.Random(steps), steps)
        assert step_count(p) == steps
        assert strict_reward(p["answer"], p["answer"]) == 1.0
    assert strict_reward("<<2*3=7>>7\n#### 6", "#### 6") == 0.0
    assert strict_reward(None, "#### 6") == 0.0


def test_a_calculation_chain_is_the_arithmetic_whatever_the_words():
    from grpo.lm.data import calculation_chain
    give = {"question": "Mia has 6 apples. She gives 1 apples to Leo. How many apples does Mia have now?",
            "answer": "She gives away 1: 6-1=<<6-1=5>>5 apples.\n#### 5"}
    lose = {"question": "Sam has 6 cards. He loses 1 of them. How many cards does Sam have now?",
            "answer": "He loses 1: 6-1=<<6-1=5>>5 cards.\n#### 5"}
    assert calculation_chain(give) == calculation_chain(lose) == ("6-1=5",)
    a = {"answer": "x: <<3+5=8>>8\ny: <<8*2=16>>16\n#### 16"}
    b = {"answer": "x: <<5+3=8>>8\ny: <<2*8=16>>16\n#### 16"}
    c = {"answer": "x: <<8*2=16>>16\ny: <<3+5=8>>8\n#### 8"}
    assert calculation_chain(a) == calculation_chain(b) == ("3+5=8", "2*8=16")  # commuted: one
    assert calculation_chain(c) != calculation_chain(a)                         # the order counts
    with pytest.raises(ValueError, match="no <<a op b=c>> step"):
        calculation_chain({"answer": "#### 5"})


def test_the_new_chain_held_out_set_shares_no_chain_with_training_and_a_planted_twin_is_caught():
    """What chapters 8-11 call new arithmetic: the held-out problems whose calculation chain no
    training problem has. A training problem reworded, or the same arithmetic in another template,
    planted among them, is caught."""
    from grpo.lm.data import PROTOCOL, calculation_chain, chain_seen, reword
    train, _ = PROTOCOL.splits()
    held = PROTOCOL.held_out(2000)
    seen = chain_seen(held, train)
    new = [p for p, s in zip(held, seen) if not s]
    assert not {calculation_chain(p) for p in train} & {calculation_chain(p) for p in new}
    assert 0.3 < len(new) / len(held) < 0.5                 # the book's figures: 771 of 2,000
    gift = next(p for p in train if "gives her" in p["question"] or "gives him" in p["question"])
    buy = {"question": "Kai has some. He buys more.",          # the same arithmetic, bought
           "answer": gift["answer"].replace("gives", "buys")}
    planted = new[:5] + [reword(gift, random.Random(0)), buy]
    assert chain_seen(planted, train) == [False] * 5 + [True, True]


def test_each_step_is_read_back_as_the_template_that_worded_it():
    from grpo.lm.data import calculation_chain, step_templates
    assert step_templates({"question": "Leo has 3 boxes with 4 eggs in each. How many eggs does Leo "
                                       "have now?"}) == ("boxes",)
    assert step_templates({"question": "Sam has 10 stamps. Ines gives him 1 stamps. He gives 6 "
                                       "stamps to Ines. How many stamps does Sam have now?"}) == (
        "gift", "give")
    assert step_templates({"question": "Ava has 4 cards. How many cards does Ava have now?"}) == ()
    operation = {"boxes": "*", "times": "*", "buy": "+", "gift": "+", "give": "-", "lose": "-",
                 "share": "/"}
    rng, seen = random.Random(5), set()
    for _ in range(1500):
        p = make_problem(rng, rng.randint(1, 4))
        found = step_templates(p)
        chain = calculation_chain(p)
        assert len(found) == len(chain)
        assert all(operation[t] in step for t, step in zip(found, chain)), (p["question"], found)
        seen.update(found)
    assert seen == set(operation)


@pytest.mark.parametrize("problem", [{"question": "Mia has 3 apples. She eats 2 of them. How many?"},
                                     {"answer": "#### 3"}, "Mia has 3 apples.", None])
def test_a_question_no_template_wrote_is_named(problem):
    from grpo.lm.data import step_templates
    with pytest.raises(ValueError, match="problem"):
        step_templates(problem)


def test_a_lift_splits_by_chain_with_the_chains_as_clusters():
    import numpy as np
    from grpo.lm.eval import lift_by_chain
    from grpo.stats import paired_lift
    step = {s: {"answer": f"x: <<{s}>>\n#### 0"} for s in ("1+1=2", "2+2=4", "3+3=6", "4+4=8")}
    chain = ["1+1=2", "2+2=4", "3+3=6", "4+4=8", "1+1=2", "3+3=6"]
    problems, train = [step[c] for c in chain], [step["1+1=2"], step["2+2=4"]]
    before = np.array([0, 0, 0, 1, 1, 0])
    after = np.array([[1, 1, 0, 1, 1, 1], [0, 1, 1, 1, 0, 0]])
    split = lift_by_chain(before, after, problems, train)
    assert split.new_mask.tolist() == [False, False, True, True, False, True]
    assert (split.new_chains, split.seen_chains) == (2, 2)
    for got, m in ((split.new, split.new_mask), (split.seen, ~split.new_mask)):
        want = paired_lift(before[m], after[:, m], clusters=[c for c, k in zip(chain, m) if k])
        assert (got.points, got.ci95) == (want.points, want.ci95)
    unclustered = paired_lift(before[split.new_mask], after[:, split.new_mask])
    assert split.new.per_seed_ci95 != unclustered.per_seed_ci95      # the chains are resampled
    with pytest.raises(ValueError, match="len\\(problems\\) = 6"):
        lift_by_chain(before[:4], after, problems, train)
