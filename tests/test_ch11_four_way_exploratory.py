"""Chapter 11's second design as committed before its runs: the record every run and the results file
keep, held to its commit without reading git."""
import hashlib
import json

from grpo.experiments.ch11_pretrained import four_way_runs as W

# sha256 of the canonical JSON (sorted keys, no spaces, ASCII) of design.FOUR_WAY_DESIGN's record
# as committed before the runs, at commit 5a638f6; computed there with git once, so this test needs
# no history.
COMMITTED_DESIGN_SHA256 = "02965ce17c916e07c2d5d1467bda83988a00815109864ea0682d1e875764794e"


def _digest(record: dict) -> str:
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def test_the_committed_design_is_the_record_at_its_commit_and_the_runs_store_it():
    record = W.committed_design()
    assert _digest(record) == COMMITTED_DESIGN_SHA256
    assert _digest(W.load_run("start")["design"]) == COMMITTED_DESIGN_SHA256
    record["primary"] = "the change in share (d): +27.3 points"     # a result written over it
    assert _digest(record) != COMMITTED_DESIGN_SHA256
    assert W.committed_design()["primary"].startswith("the change in share (d), right, from")
