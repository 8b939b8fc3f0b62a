import json
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.font_manager import FontProperties  # noqa: E402

from grpo.book import plots  # noqa: E402
from grpo.toy import lava


def test_animation_html_has_a_stable_id_per_name_and_says_what_it_shows():
    floor = lava.held_out_floors()[0]
    run = lava.play(floor, np.zeros((4, 2)), np.random.default_rng(0))
    alt = 'a run of "the bot" <falls> into lava'
    a = plots.animation_html(plots.animate_run(floor, run), "demo", alt).data
    b = plots.animation_html(plots.animate_run(floor, run), "demo", alt).data
    c = plots.animation_html(plots.animate_run(floor, run), "other", alt).data
    assert a == b and a != c
    assert "_anim_img" in a
    assert 'alt="a run of &quot;the bot&quot; &lt;falls> into lava"' in a
    anim = plots.animate_run(floor, run)
    with pytest.raises(ValueError, match="name"):
        plots.animation_html(anim, "", alt)
    with pytest.raises(ValueError, match="alt"):
        plots.animation_html(anim, "demo", "")
    anim.to_jshtml()          # drawn, so matplotlib does not warn about an unused animation


def test_animate_flights_steps_every_flight_together_and_holds_a_finished_one():
    """Two flights of 5 and 90 frames at most 30 frames: every 3rd frame, 30 frames, and the short
    flight holds its last frame once it has ended."""
    short = np.zeros((5, 4, 6, 3), np.uint8) + np.arange(5, dtype=np.uint8)[:, None, None, None]
    long = np.zeros((90, 4, 6, 3), np.uint8) + np.arange(90, dtype=np.uint8)[:, None, None, None]
    anim = plots.animate_flights([short, long], ["short", "long"], max_frames=30)
    images = [ax.images[0] for ax in anim._fig.axes]
    assert [ax.get_title() for ax in anim._fig.axes] == ["short", "long"]
    assert anim._fig.dpi == plots.FLIGHT_FRAME_DPI          # the titles' size, in pixels as drawn:
    assert all(ax.title.get_fontsize() * anim._fig.dpi / 72 >= 9 for ax in anim._fig.axes)
    frames = list(anim.new_frame_seq())
    assert len(frames) == 30
    anim._func(frames[-1])
    assert images[0].get_array()[0, 0, 0] == 4 and images[1].get_array()[0, 0, 0] == 87
    anim._func(1)
    assert images[0].get_array()[0, 0, 0] == 3 and images[1].get_array()[0, 0, 0] == 3
    with pytest.raises(ValueError, match="title"):
        plots.animate_flights([short], ["a", "b"])
    with pytest.raises(ValueError, match="frame"):
        plots.animate_flights([short[:0]], ["a"])
    anim.to_jshtml()          # drawn, so matplotlib does not warn about an unused animation


def test_before_after_runs_draws_each_policys_runs_on_the_same_floor():
    floor = lava.held_out_floors()[3]
    W_leapy = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [-3.0, 3.0]])
    fig = plots.before_after_runs(floor, {"untrained": np.zeros((4, 2)), "GRPO, trained": W_leapy},
                                  G=3, seed=1)
    axes = fig.axes
    assert len(axes) == 2
    # three stacked floors per panel, 40 tiles each
    assert all(len(ax.patches) == 3 * lava.N_TILES for ax in axes)
    assert axes[0].get_title().startswith("untrained: expected score ")
    expected = float(lava.exact_score(floor, W_leapy).score)
    assert axes[1].get_title() == f"GRPO, trained: expected score {expected:.3f}"
    # the run labels are the scores of the runs the same seed plays
    runs = lava.play_group(floor, W_leapy, 3, np.random.default_rng(1))
    texts = [t.get_text() for t in axes[1].texts]
    assert texts == [f"score {r.score:.3f}" for r in runs]
    # colours: grey for untrained, GRPO's green for the trained bot
    assert axes[0].lines[0].get_color() == plots.COLORS["untrained"]
    assert axes[1].lines[0].get_color() == plots.COLORS["GRPO"]
    plt.close(fig)


def test_before_after_runs_rejects_bad_input():
    floor = lava.held_out_floors()[0]
    with pytest.raises(ValueError, match="policies"):
        plots.before_after_runs(floor, {})
    with pytest.raises(ValueError, match="G"):
        plots.before_after_runs(floor, {"a": np.zeros((4, 2))}, G=0)
    with pytest.raises(ValueError, match="seed"):
        plots.before_after_runs(floor, {"a": np.zeros((4, 2))}, seed=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        plots.before_after_runs(np.zeros(5), {"a": np.zeros((4, 2))})


def test_draw_runs_needs_one_label_per_run():
    floor = lava.held_out_floors()[0]
    runs = lava.play_group(floor, np.zeros((4, 2)), 2, np.random.default_rng(0))
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="label"):
        plots.draw_runs(ax, floor, runs, labels=["only one"])
    with pytest.raises(ValueError, match="empty"):
        plots.draw_runs(ax, floor, [])
    plt.close(fig)


# --- figure text: the floor the browser test relies on ---------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
SCALINGS_BELOW_FLOOR = ("xx-small", "x-small")        # 5.8 and 6.9 pt at the book's 10 pt


def small_text(source: str) -> list[str]:
    """Font sizes in ``source`` below the book's floor: a number below plots.MIN_FONT_PT, a named
    size below it, or, in code that draws at its own ``dpi=N``, text under 9 px at that dpi."""
    sizes = [float(v) for v in re.findall(r"\b(?:fontsize|labelsize)\s*=\s*([0-9.]+)", source)]
    dpis = [float(v) for v in re.findall(r"\bdpi\s*=\s*([0-9.]+)", source)]
    bad = [f"{pt:g} pt" for pt in sizes if pt < plots.MIN_FONT_PT]
    bad += [f"{pt:g} pt at dpi {dpi:g} is {pt * dpi / 72:.1f} px" for pt in sizes for dpi in dpis
            if pt * dpi / 72 < 9]
    bad += re.findall(r"\b(?:fontsize|labelsize|size)\s*=\s*[\"'](xx-small|x-small)[\"']", source)
    return bad


def test_small_text_finds_each_kind_of_small_font():
    assert small_text("ax.legend(fontsize=7)") == ["7 pt"]
    assert small_text("fig = plt.figure(dpi=64)\nax.set_title(t, fontsize=9)") == ["9 pt at dpi 64 is 8.0 px"]
    assert small_text('ax.legend(fontsize="x-small")') == ["x-small"]
    assert small_text("ax.legend(fontsize=8)\nax.set_title(t, fontsize=10.5)") == []


def test_no_figure_text_below_the_floor():
    """Every figure the book draws keeps its text >= MIN_FONT_PT (the browser test turns that
    into >= 9 px as shown); checked in every notebook code cell and every library file."""
    offenders = []
    for nb_path in sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("book/*.ipynb")]):
        cells = json.loads(nb_path.read_text())["cells"]
        for k, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                offenders += [f"{nb_path.name} cell {k}: {b}" for b in small_text("".join(cell["source"]))]
    for py in sorted((ROOT / "lib" / "grpo").rglob("*.py")):
        offenders += [f"{py.relative_to(ROOT)}: {b}" for b in small_text(py.read_text())]
    assert not offenders, offenders
    plots.use_book_style()
    keys = ("font.size", "axes.titlesize", "axes.labelsize", "legend.fontsize", "xtick.labelsize",
            "ytick.labelsize", "figure.titlesize")
    points = {k: FontProperties(size=matplotlib.rcParams[k]).get_size_in_points() for k in keys}
    assert min(points.values()) >= plots.MIN_FONT_PT, points
    assert matplotlib.rcParams["figure.dpi"] == matplotlib.rcParams["savefig.dpi"] == plots.DPI


def test_four_way_bars_stack_each_row_to_one_and_refuse_a_bad_row():
    from grpo.book.plots import FOUR_WAY_LABELS, four_way_bars
    row = {"right": 0.5, "slip": 0.1, "other_calculation": 0.3, "no_equation": 0.1}
    fig, ax = plt.subplots()
    four_way_bars(ax, {"start": row, "after": {**row, "right": 0.6, "other_calculation": 0.2}})
    widths = [p.get_width() for p in ax.patches]
    assert len(widths) == 8 and abs(sum(widths[:4]) - 1) < 1e-9 and widths[4] == 0.6
    assert [t.get_text() for t in ax.get_yticklabels()] == ["start", "after"]
    assert set(ax.get_legend_handles_labels()[1]) == set(FOUR_WAY_LABELS.values())
    plt.close(fig)
    with pytest.raises(ValueError, match="rows"):
        four_way_bars(ax, {})
    with pytest.raises(ValueError, match="summing to 1"):
        four_way_bars(ax, {"bad": {**row, "right": 0.9}})
    with pytest.raises(ValueError, match="four shares"):
        four_way_bars(ax, {"bad": {"right": 1.0}})
