"""The verifier rejects malformed numbers instead of reading their first digits (issue 18)."""
import pytest

from grpo.lm.verifier import extract_answer, reward


@pytest.mark.parametrize("text", ["#### 1/2", "#### 3-4", "#### 3 - 4", "#### 1,2", "#### 1,234,5",
                                  "#### 72.0.1", "#### 0x10", "#### 1e5", "#### 2*3"])
def test_a_malformed_number_is_unreadable(text):
    assert extract_answer(text) is None
    first_digits = text.split()[1][0]
    assert reward(text, f"#### {first_digits}") == 0.0          # never credited for its first digits


@pytest.mark.parametrize("text, value", [("#### 72", "72"), ("#### $1,200 dollars.", "1200"),
                                         ("#### 12,345,678", "12345678"), ("#### -5", "-5"),
                                         ("#### 72.", "72"), ("#### 72, so", "72"), ("#### 2.50", "2.5"),
                                         ("#### 10 + tip", "10"), ("#### 5 apples", "5")])
def test_well_formed_numbers_still_read(text, value):
    assert extract_answer(text) == value


def test_trl_reward_refuses_unequal_lengths():
    from grpo.lm.hf import trl_reward
    f = trl_reward()
    assert f(["#### 3", "#### 4"], answer=["#### 3", "#### 5"]) == [1.0, 0.0]
    with pytest.raises(ValueError):
        f(["#### 3", "#### 4"], answer=["#### 3"])


@pytest.mark.parametrize("text, value", [("so she has 1,200.", "1200"), ("9 + 1 = 10 books.", "10"),
                                         ("-3 left", "-3"), ("It costs $2.50", "2.5"), ("1, 2, 3.", "3"),
                                         ("no number", None), ("x 1,2", None), (None, None)])
def test_last_number_reads_the_number_a_prose_answer_ends_on(text, value):
    from grpo.lm.verifier import last_number
    assert last_number(text) == value


def test_last_number_reward_is_an_exact_match_that_never_raises():
    from grpo.lm.verifier import last_number_reward
    assert last_number_reward("So he has 10 books.", "Kai buys 1: 9+1=<<9+1=10>>10 books.\n#### 10") == 1.0
    assert last_number_reward("So he has 10 books, not 11.", "#### 10") == 0.0
    assert last_number_reward(object(), "#### 10") == 0.0 and last_number_reward("10", object()) == 0.0


# ----------------------------------------------------------------------------- an answer read four ways

@pytest.mark.parametrize("text, calculation, expected", [
    ("Omar has 8 shells.", "1+7=8", "no_equation"),                       # no equation
    ("Omar has 7 plus 1, that is 8.", "1+7=8", "no_equation"),            # an equation in words
    ("", "1+7=8", "no_equation"),
    ("Omar has 7 + 2 = 9 shells.", "1+7=8", "other_calculation"),         # a wrong operand, true
    ("Omar has 7 + 2 = 8 shells.", "1+7=8", "other_calculation"),         # a wrong operand, false
    ("Omar has 7 - 1 = 6 shells.", "1+7=8", "other_calculation"),         # another operation
    ("2 * 2 * 2 = 4", "2*2=4", "other_calculation"),                      # three operands, false
    ("2 * 2 * 2 = 8", "2*2=4", "other_calculation"),                      # three operands, true
    ("Omar has 7 + 1 = 8 shells.", "1+7=8", "right"),                     # either order for +
    ("Omar has 1 + 7 = 8 shells.", "1+7=8", "right"),
    ("4 x 3 = 12 eggs", "3*4=12", "right"), ("4×3=12", "3*4=12", "right"),  # either order for *
    ("12 ÷ 3 = 4", "12/3=4", "right"), ("3 / 12 = 4", "12/3=4", "other_calculation"),  # not for /
    ("3 - 7 = -4", "7-3=4", "other_calculation"),                         # not for -: negative result
    ("7 - 3 = -4", "7-3=4", "slip"),                                      # a negative result, false
    ("7 \u2212 3 = 4", "7-3=4", "right"),                                 # the minus sign
    ("6 / 2 = 3.0", "6/2=3", "right"), ("6 / 2 = 2.5", "6/2=3", "slip"),  # a decimal result
    ("Omar has 7 + 1 = 9 shells.", "1+7=8", "slip"),
    ("Omar has 8 shells. Check: 7 + 1 = 8", "1+7=8", "right"),           # an equation after the answer
    ("Omar has 8 shells. #### 8\n7 + 1 = 9", "1+7=8", "slip"),
    ("5 + 3 = 8, then 8 - 2 = 6", "3+5=8", "right"),                      # two equations: the first
    ("8 - 2 = 6, then 5 + 3 = 8", "3+5=8", "other_calculation"),
    ("1,000 + 5 = 1,005", "5+1000=1005", "right"),                        # thousands grouped
])
def test_an_answer_is_read_one_of_four_ways(text, calculation, expected):
    from grpo.lm.verifier import CALCULATION_READINGS, read_calculation
    assert read_calculation(text, calculation) == expected in CALCULATION_READINGS


def test_equations_are_read_whole_and_exactly():
    from fractions import Fraction
    from grpo.lm.verifier import equations_in
    three, decimal, negative = equations_in("2 * 2 * 2 = 4; 7 / 2 = 3.5 and 3 - 5 = -2.")
    assert three.operands == (2, 2, 2) and three.operators == ("*", "*") and not three.true
    assert decimal.result == Fraction(7, 2) and decimal.true
    assert negative.result == -2 and negative.true
    assert [e.text for e in equations_in("boxes-3 + 1 = 4 and 2 + 3 * 4 = 14")] == ["3 + 1 = 4",
                                                                                  "2 + 3 * 4 = 14"]
    assert equations_in("2 + 3 * 4 = 14")[0].true                       # * before +
    assert equations_in("8 = 5 + 3") == [] and equations_in(None) == []
    assert equations_in("5 / 0 = 1")[0].value is None and not equations_in("5 / 0 = 1")[0].true


@pytest.mark.parametrize("calculation", ["3+5", "3+5+1=9", "a+b=c", 38, "3 + 5 = 8"])
def test_a_malformed_calculation_is_refused_by_name(calculation):
    from grpo.lm.verifier import read_calculation
    with pytest.raises(ValueError, match="calculation"):
        read_calculation("3 + 5 = 8", calculation)
