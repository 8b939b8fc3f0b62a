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
