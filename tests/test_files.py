"""grpo.files: a write is all or nothing, and an unchanged file is not touched."""
import os

import pytest

from grpo.files import write_atomically, write_text_atomically


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")

    def half_then_crash(tmp):
        tmp.write_text("ne")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_atomically(path, half_then_crash)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_the_new_file_replaces_the_old_inode(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    with open(path) as reader:                      # a reader that opened the old file ...
        write_text_atomically(path, "new")
        assert reader.read() == "old"               # ... reads it whole
    assert path.read_text() == "new"


def test_the_same_text_is_not_rewritten(tmp_path):
    path = write_text_atomically(tmp_path / "sub" / "r.json", "same\n")
    os.utime(path, (1, 1))
    write_text_atomically(path, "same\n")
    assert path.stat().st_mtime == 1
    write_text_atomically(path, "other\n")
    assert path.stat().st_mtime != 1 and path.read_text() == "other\n"


@pytest.mark.parametrize("call, match", [
    (lambda p: write_atomically(p, "not callable"), "write"),
    (lambda p: write_text_atomically(p, b"bytes"), "text"),
])
def test_bad_input_is_a_clear_error(tmp_path, call, match):
    with pytest.raises(ValueError, match=match):
        call(tmp_path / "r.json")
