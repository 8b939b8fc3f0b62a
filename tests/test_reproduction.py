"""grpo.book.reproduction: the published figures file and the verdicts the report prints."""
import json
from pathlib import Path

import pytest

from grpo.book import reproduction as rep


def write(folder, name, data):
    (folder / f"{name}.json").write_text(json.dumps(data))


def fig(**kw):
    base = {"chapter": 9, "figure": "f", "published": 1.0, "unit": 0.01, "source": "s",
            "ours": "09_x:value", "noise": "rounding"}
    return {**base, **kw}


def test_the_books_published_file_is_valid_and_every_row_names_a_registry_key():
    data = rep.load_published()
    assert data["figures"] and all(f["source"] in data["sources"] for f in data["figures"])
    for f in data["figures"]:                 # chapters that ran have the key they are compared on
        value = rep.registry_value(f["ours"])
        assert value is rep.NOT_RUN or isinstance(value, (int, float))


def test_a_missing_registry_file_is_not_run_and_not_counted(tmp_path):
    v = rep.judge(fig(), folder=tmp_path)
    assert v.ours is rep.NOT_RUN and v.within is None and not v.counted


def test_a_missing_key_in_an_existing_file_is_an_error(tmp_path):
    write(tmp_path, "09_x", {"other": 1})
    with pytest.raises(KeyError, match="value"):
        rep.judge(fig(), folder=tmp_path)


@pytest.mark.parametrize("published, ours, diff", [(1.0, 1.25, 0.25), ([1.0, 2.0], 1.5, 0.0),
                                                   ([1.0, 2.0], 0.5, -0.5), ([None, 200], 250, 50),
                                                   ([None, 200], -80, 0.0), ([3, None], 1, -2)])
def test_difference_from_a_value_or_a_range(published, ours, diff):
    assert rep.difference(ours, published) == pytest.approx(diff)


def test_the_chapter_6_rows_use_the_seed_spread(tmp_path):
    """A LunarLander registry shaped as issue 8 asks: GRPO and A2C below 200 judged by the seed
    spread, no degenerate groups; PPO at half the published steps shown for scale, not judged."""
    write(tmp_path, "06_lunar_lander", {
        "PPO": {"det_return_mean": 262.0, "det_return_per_seed": [250.0, 262.0, 274.0]},
        "GRPO_outcome": {"det_return_mean": 120.0, "det_return_per_seed": [100.0, 120.0, 140.0],
                         "degenerate_fraction": 0.004},
        "A2C": {"det_return_mean": 215.0, "det_return_per_seed": [213.0, 215.0, 217.0]}})
    rows = {f["ours"]: f for f in rep.load_published()["figures"] if f["chapter"] == 6}
    ppo = rep.judge(rows["06_lunar_lander:PPO.det_return_mean"], folder=tmp_path)
    assert ppo.difference == pytest.approx(-11.0) and ppo.within is None and ppo.counted
    grpo = rep.judge(rows["06_lunar_lander:GRPO_outcome.det_return_mean"], folder=tmp_path)
    assert grpo.difference == 0.0 and grpo.within                        # below 200: as published
    a2c = rep.judge(rows["06_lunar_lander:A2C.det_return_mean"], folder=tmp_path)
    assert a2c.difference == pytest.approx(15.0) and not a2c.within      # it solved: outside
    assert a2c.sigma == pytest.approx((2 * 4.0 / 3) ** 0.5)              # var 4 over 3 seeds
    degenerate = rep.judge(rows["06_lunar_lander:GRPO_outcome.degenerate_fraction"], folder=tmp_path)
    assert degenerate.within                                             # 0.004 rounds to 0.00


def test_the_chapter_7_row_is_a_band(tmp_path):
    row = next(f for f in rep.load_published()["figures"] if f["chapter"] == 7)
    for accuracy, within in ((0.42, True), (0.30, False), (0.55, False)):
        write(tmp_path, "07_small_lm", {"sft_greedy_accuracy": accuracy})
        assert rep.judge(row, folder=tmp_path).within is within


def test_exact_group_range_and_caller_measured_kinds(tmp_path):
    write(tmp_path, "09_x", {"value": 100, "crossings": [90, None, 200], "groups": [90, 120]})
    assert rep.judge(fig(noise="exact", published=100), folder=tmp_path).within
    assert not rep.judge(fig(noise="exact", published=99), folder=tmp_path).within
    ranged = fig(noise="group_range", published=170, seeds="09_x:crossings")
    assert rep.judge(ranged, folder=tmp_path).within
    assert not rep.judge({**ranged, "published": 80}, folder=tmp_path).within
    assert not rep.judge({**ranged, "seeds": "09_x:groups"}, folder=tmp_path).within
    trained = fig(noise="trained", published=98.0)
    assert rep.judge(trained, sigma=1.0, folder=tmp_path).within             # 2 <= 2 sigma
    assert not rep.judge(trained, sigma=0.9, folder=tmp_path).within
    with pytest.raises(ValueError, match="sigma"):
        rep.judge(trained, folder=tmp_path)


def test_bad_files_and_references_are_refused(tmp_path):
    good = {"sources": {"s": {"cite": None, "text": "t", "short": "s"}}, "figures": [fig()]}
    path = tmp_path / "published.json"
    for broken, match in ((fig(noise="vibes"), "noise kind"), (fig(source="nowhere"), "source"),
                          (fig(unit=0), "unit"), (fig(ours="no_colon"), "registry reference"),
                          (fig(noise="seeds"), "needs 'seeds'"),
                          ({k: v for k, v in fig().items() if k != "unit"}, "lacks")):
        path.write_text(json.dumps({**good, "figures": [broken]}))
        with pytest.raises(ValueError, match=match):
            rep.load_published(path)
    write(tmp_path, "09_x", {"value": "high"})
    with pytest.raises(ValueError, match="not a number"):
        rep.judge(fig(), folder=tmp_path)


def test_fmt_keeps_the_published_precision():
    assert rep.fmt(0.24, 0.001) == "0.240" and rep.fmt(0.2525, 0.001, extra=1) == "0.2525"
    assert rep.fmt(0.59, 0.01) == "0.59" and rep.fmt(170, 10) == "170"
    assert rep.fmt([273, 280], 1) == "273–280" and rep.fmt([None, 200], 1) == "below 200"
    assert rep.fmt([0.35, None], 0.01) == "above 0.35"


def test_speed_rows_rates_times_and_missing_files(tmp_path):
    write(tmp_path, "06_x", {"ours_steps_per_cpu_s": 12000, "sb3_steps_per_cpu_s": 6000})
    write(tmp_path, "08_x", {"ours_step_wall_s": 5.0, "trl_step_wall_s": 4.0})
    rate = {"file": "06_x", "ours": "ours_steps_per_cpu_s", "peer": "sb3_steps_per_cpu_s",
            "target_ratio": 2.0}
    row = rep.speed_row(rate, tmp_path)
    assert row.speedup == 2.0 and row.target_met
    assert rep.speed_row({**rate, "target_ratio": 2.5}, tmp_path).target_met is False
    step = {"file": "08_x", "ours": "ours_step_wall_s", "peer": "trl_step_wall_s", "lower_is_better": True,
            "target_ratio": None}
    row = rep.speed_row(step, tmp_path)
    assert row.speedup == pytest.approx(0.8) and row.target_met is None    # ours is slower
    assert rep.speed_row({**rate, "file": "07_absent"}, tmp_path).ours is None
    write(tmp_path, "09_x", {"a": 0, "b": 1})
    with pytest.raises(ValueError, match="positive"):
        rep.speed_row({"file": "09_x", "ours": "a", "peer": "b"}, tmp_path)


def test_every_speed_item_in_the_books_file_reads_its_bench_file():
    """Each speed row of data/published.json reads both of its keys from its data/bench/ file (a
    renamed key would make the row 'not measured yet'), and its ratio and verdict follow them."""
    bench_dir = rep.results_dir().parent / "bench"
    for item in rep.load_published()["speed"]:
        bench = json.loads((bench_dir / f"{item['file']}.json").read_text())
        row = rep.speed_row(item)
        assert (row.ours, row.peer) == (bench[item["ours"]], bench[item["peer"]]), item["what"]
        ratio = row.peer / row.ours if item.get("lower_is_better") else row.ours / row.peer
        assert row.speedup == pytest.approx(ratio), item["what"]
        target = item.get("target_ratio")
        assert row.target_met == (None if target is None else row.speedup >= target), item["what"]


def test_a_single_published_run_counts_its_own_spread(tmp_path):
    """A replication over n seeds against one published run: sigma^2 = var (1/n + 1/1), so a mean
    that lands above the single draw by less than two such sigmas is within noise."""
    write(tmp_path, "09_x", {"lift": 19.0, "per_seed": [17.6, 19.0, 20.4]})          # var 1.96
    fig = {"chapter": 9, "figure": "x", "published": 16.2, "unit": 0.1, "source": "s", "ours": "09_x:lift",
           "noise": "seeds", "seeds": "09_x:per_seed", "published_runs": 1}
    v = rep.judge(fig, folder=tmp_path)
    assert v.sigma == pytest.approx((1.96 * (1 / 3 + 1)) ** 0.5) and v.within     # 2.8 <= 2 * 1.62
    assert not rep.judge({**fig, "published_runs": 3}, folder=tmp_path).within      # 2.8 > 2 * 1.14


def test_a_context_row_is_shown_but_never_judged(tmp_path):
    (tmp_path / "06_x.json").write_text(json.dumps({"PPO": {"det": 253.0}}))
    row = {"chapter": 6, "figure": "PPO at half the steps", "published": [273, 280], "unit": 1,
           "source": "s", "ours": "06_x:PPO.det", "noise": "context", "explanation": "half the steps"}
    v = rep.judge(row, folder=tmp_path)
    assert v.ours == 253.0 and v.difference == -20.0 and v.within is None and v.counted
    bad = {"sources": {"s": {}}, "figures": [{k: x for k, x in row.items() if k != "explanation"}]}
    (tmp_path / "published.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="needs its 'explanation'"):
        rep.load_published(tmp_path / "published.json")


def test_a_crossing_later_than_every_group_that_crosses_is_not_decided(tmp_path):
    """Chapter 4's case: groups cross at 100, never, 120, 120, 160 and the published seed mean at
    170. "Never" is not a crossing at infinity: the published value is not counted as a match, nor
    as a miss, and the verdict says why."""
    write(tmp_path, "04_x", {"at": 100, "groups": [100, None, 120, 120, 160], "none": [None, None],
                             "all": [100, 120, 160]})
    row = fig(ours="04_x:at", noise="group_range", published=170, unit=10, seeds="04_x:groups")
    v = rep.judge(row, folder=tmp_path)
    assert v.within is None and v.counted and v.difference == -70
    assert v.reason == ("later than every group of ours that crosses (100 to 160), and 1 of 5 "
                        "groups never crosses within the run")
    assert rep.judge({**row, "published": 150}, folder=tmp_path).within          # among them
    assert rep.judge({**row, "published": 90}, folder=tmp_path).within is False  # earlier than all
    assert rep.judge({**row, "seeds": "04_x:all"}, folder=tmp_path).within is False  # all crossed
    assert rep.judge({**row, "seeds": "04_x:none"}, folder=tmp_path).reason == (
        "no group of ours crosses within the run")
    write(tmp_path, "04_x", {"at": 100, "groups": []})
    with pytest.raises(ValueError, match="groups' crossings"):
        rep.judge(row, folder=tmp_path)


def test_the_books_chapter_4_crossing_is_not_a_match():
    row = next(f for f in rep.load_published()["figures"] if f["noise"] == "group_range")
    v = rep.judge(row)
    assert v.within is None and "never cross" in v.reason


def test_every_noise_kind_has_a_rule_and_the_sigmas_are_the_rules():
    assert set(rep.NOISE_KINDS) == set(rep.RULES) and all(rep.RULES.values())
    assert rep.floor_set_sigma(0.01, 0.001) == pytest.approx((2e-4 + 1e-6 / 12) ** 0.5)
    assert rep.trained_sigma(0.01, 0.05, 0.01) == pytest.approx(
        (2 * (1e-4 + 0.0025 / 5) + 1e-4 / 12) ** 0.5)


def test_the_report_describes_every_rule_it_applies():
    """Each noise kind a figure uses is described on the rendered page, in RULES' words; a kind
    the page left out is caught."""
    from grpo.book import prose
    page = prose.page_text(json.loads((Path(__file__).parents[1] / "book" /
                                       "reproduction.ipynb").read_text()))
    used = {f["noise"] for f in rep.load_published()["figures"]}
    assert {"rounding", "group_range", "seeds"} <= used

    def undescribed(text):
        return sorted(k for k in used if rep.RULES[k] not in text)

    assert not undescribed(page), f"the report does not describe the rules {undescribed(page)}"
    assert undescribed(page.replace(rep.RULES["rounding"], "")) == ["rounding"]
