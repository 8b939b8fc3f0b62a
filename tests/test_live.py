"""grpo.book.live: the chapters' slider panels and the static grid figure beside them."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from grpo.book import live  # noqa: E402
from grpo.toy import algos, lava


def test_train_curves_is_the_chapters_protocol_with_one_knob_changed():
    runs = live.train_curves("GRPO", seeds=[0], updates=20, eps=0.1)
    same = algos.run_seeds("GRPO", seeds=[0], updates=20, eps=0.1)
    np.testing.assert_array_equal(runs.curves, same.curves)
    assert runs.runs[0].hparams["eps"] == 0.1


@pytest.mark.parametrize("algo, knobs", [("REINFORCE", {"lr", "G"}),
                                         ("PPO", {"lr", "G", "eps", "passes"}),
                                         ("GRPO", {"lr", "G", "eps", "passes"})])
def test_each_chapter_panel_has_its_knobs_and_redraws_on_change(algo, knobs):
    box = live.panel(algo, seeds=[0], updates=20)
    controls = [w for row in box.children[:2] for w in row.children]
    assert {w.description for w in controls} == knobs | set(live.DEFAULT_CHOICES[algo])
    status = box.children[2]
    first = status.value
    assert "% of the ceiling" in first                                    # drawn on creation
    lr = next(w for w in controls if w.description == "lr")
    lr.value = 0.05                                                       # a slider move re-trains
    assert status.value != first
    expected = live.train_curves(algo, [0], 20, lr=lr.value).final_scores.mean()
    assert f"final score {expected:.3f}" in status.value
    plt.close("all")


def test_grpo_panel_offers_the_averaging_choice():
    box = live.panel("GRPO", seeds=[0], updates=10)
    dropdown = [w for w in box.children[1].children if w.description == "averaging"][0]
    assert list(dropdown.options) == ["batch_steps", "per_answer", "constant"]
    dropdown.value = "per_answer"
    expected = live.train_curves("GRPO", [0], 10, averaging="per_answer").final_scores.mean()
    assert box.children[2].value.startswith(f"final score {expected:.3f}")
    plt.close("all")


def test_panel_choices_add_a_dropdown():
    box = live.panel("GRPO", seeds=[0], updates=10, choices={"passes": [1, 2]})
    dropdown = [w for w in box.children[1].children if w.description == "passes"][0]
    assert list(dropdown.options) == [1, 2] and not hasattr(dropdown, "min")
    dropdown.value = 2
    assert box.children[2].value.startswith(
        f"final score {live.train_curves('GRPO', [0], 10, passes=2).final_scores.mean():.3f}")
    with pytest.raises(ValueError, match="empty"):
        live.panel("GRPO", seeds=[0], updates=10, choices={"passes": []})
    plt.close("all")


def test_grid_figure_draws_one_curve_per_value_against_the_ceiling():
    fig = live.grid_figure("PPO", "lr", [0.25, 1.0], seeds=[0, 1], updates=20)
    ax = fig.axes[0]
    curves = [ln for ln in ax.lines if len(ln.get_xdata()) > 2]
    assert len(curves) == 2
    runs = algos.run_seeds("PPO", seeds=[0, 1], updates=20, lr=1.0)
    np.testing.assert_allclose(curves[1].get_ydata(), runs.curves.mean(axis=0))
    levels = [ln.get_ydata()[0] for ln in ax.lines if len(ln.get_xdata()) == 2]
    assert pytest.approx(lava.ceiling().score) in levels                  # the ceiling line
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("lr = 0.25: final") and any("best possible" in t for t in labels)
    plt.close(fig)


def test_grid_figure_over_a_choice():
    fig = live.grid_figure("GRPO", "averaging", ["batch_steps", "constant"], seeds=[0], updates=10)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0].startswith("averaging = batch_steps: final")
    plt.close(fig)


@pytest.mark.parametrize("call", [
    lambda: live.grid_figure("SAC", "lr", [0.5]),
    lambda: live.grid_figure("REINFORCE", "eps", [0.2]),                  # REINFORCE has no clip
    lambda: live.grid_figure("GRPO", "lr", []),
    lambda: live.train_curves("GRPO", seeds=[], updates=5),
    lambda: live.train_curves("GRPO", seeds=[0.5], updates=5),
    lambda: live.train_curves("REINFORCE", seeds=[0], updates=5, passes=2),
    lambda: live.train_curves("GRPO", seeds=[0], updates=5, averaging="median"),
    lambda: live.panel("DQN"),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()
