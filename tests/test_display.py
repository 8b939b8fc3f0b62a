import pytest

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
