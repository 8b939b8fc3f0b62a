import pytest

from grpo.book import display
from grpo.book.display import markdown_table, show_source


def test_markdown_table_layout():
    md = markdown_table(["a", "b"], [[1, "x"], [2.5, "y"]]).data
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1 | x |", "| 2.5 | y |"]


def test_markdown_table_rejects_ragged_rows():
    with pytest.raises(ValueError, match="one cell per header"):
        markdown_table(["a", "b"], [[1]])


def test_show_source_prints_the_code(capsys):
    show_source(markdown_table)
    assert "def markdown_table" in capsys.readouterr().out
    with pytest.raises(ValueError):
        show_source(3)


def test_progress_yields_every_step_and_is_silent_under_the_pins(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert list(display.progress(range(5), "steps")) == [0, 1, 2, 3, 4]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    monkeypatch.setenv("TQDM_DISABLE", "")
    assert list(display.progress(range(3), "steps")) == [0, 1, 2]
    assert "steps" in capsys.readouterr().err                    # the bar is drawn without the pin
    with pytest.raises(ValueError, match="iterable"):
        display.progress("abc")


def test_show_config_prints_a_nested_config_one_field_a_line(capsys):
    from grpo.book.display import show_config
    from grpo.lm.eval import EvalConfig
    from grpo.lm.rl import RunConfig
    show_config(RunConfig(evaluation=EvalConfig(every=7)))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "RunConfig(" and lines[-1] == ")"
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("evaluation"))
    assert lines[at].endswith("= EvalConfig(")
    assert lines[at + 1].split() == ["every", "=", "7,"]
    assert max(len(line) for line in lines) < 60          # nothing scrolls off a phone's width
    with pytest.raises(ValueError, match="dataclass instance"):
        show_config(RunConfig)
