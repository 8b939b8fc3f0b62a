import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

matplotlib.use("Agg")

from grpo import lava, plots  # noqa: E402


def test_animation_html_has_a_stable_id_per_name():
    floor = lava.test_floors()[0]
    run = lava.play(floor, np.zeros((4, 2)), np.random.default_rng(0))
    a = plots.animation_html(plots.animate_run(floor, run), "demo").data
    b = plots.animation_html(plots.animate_run(floor, run), "demo").data
    c = plots.animation_html(plots.animate_run(floor, run), "other").data
    assert a == b and a != c
    assert "_anim_img" in a
    anim = plots.animate_run(floor, run)
    with pytest.raises(ValueError, match="name"):
        plots.animation_html(anim, "")
    anim.to_jshtml()          # drawn, so matplotlib does not warn about an unused animation


def test_before_after_runs_draws_each_policys_runs_on_the_same_floor():
    floor = lava.test_floors()[3]
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
    floor = lava.test_floors()[0]
    with pytest.raises(ValueError, match="policies"):
        plots.before_after_runs(floor, {})
    with pytest.raises(ValueError, match="G"):
        plots.before_after_runs(floor, {"a": np.zeros((4, 2))}, G=0)
    with pytest.raises(ValueError, match="seed"):
        plots.before_after_runs(floor, {"a": np.zeros((4, 2))}, seed=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        plots.before_after_runs(np.zeros(5), {"a": np.zeros((4, 2))})


def test_draw_runs_needs_one_label_per_run():
    floor = lava.test_floors()[0]
    runs = lava.play_group(floor, np.zeros((4, 2)), 2, np.random.default_rng(0))
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="label"):
        plots.draw_runs(ax, floor, runs, labels=["only one"])
    with pytest.raises(ValueError, match="empty"):
        plots.draw_runs(ax, floor, [])
    plt.close(fig)
