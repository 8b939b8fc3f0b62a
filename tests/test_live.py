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


def check_grid_figure(fig, algo: str, knob: str, values, seeds, updates: int) -> None:
    """What the grid figure shows, in full: in order, one seed-mean curve per value of ``knob``
    (its updates and scores as ``algos.run_seeds`` trains them here), labelled ``knob = value:
    final score``, then the best possible and the untrained score, each line labelled with its
    level; the legend shows those labels, no other."""
    ax = fig.axes[0]
    expected = []
    for value in values:
        runs = algos.run_seeds(algo, seeds=seeds, updates=updates, **{knob: value})
        shown = value if isinstance(value, str) else format(value, "g")
        expected.append((f"{knob} = {shown}: final {runs.final_scores.mean():.3f}",
                         runs.eval_updates, runs.curves.mean(axis=0)))
    ceiling = lava.ceiling().score
    untrained = lava.exact_score(lava.held_out_floors(), np.zeros((4, 2))).mean_score
    labels = [label for label, _, _ in expected]
    labels += [f"best possible {ceiling:.3f}", f"untrained {untrained:.3f}"]
    assert [ln.get_label() for ln in ax.lines] == labels
    assert [t.get_text() for t in ax.get_legend().get_texts()] == labels
    for ln, (_, updates_at, scores) in zip(ax.lines, expected):
        np.testing.assert_allclose(ln.get_xdata(), updates_at)
        np.testing.assert_allclose(ln.get_ydata(), scores)
    for ln, level in zip(ax.lines[len(values):], (ceiling, untrained)):
        np.testing.assert_allclose(ln.get_ydata(), level)


def test_grid_figure_draws_one_curve_per_value_against_the_ceiling():
    fig = live.grid_figure("PPO", "lr", [0.25, 1.0], seeds=[0, 1], updates=20)
    check_grid_figure(fig, "PPO", "lr", [0.25, 1.0], seeds=[0, 1], updates=20)
    plt.close(fig)


def test_grid_figure_over_a_choice():
    fig = live.grid_figure("GRPO", "averaging", ["batch_steps", "constant"], seeds=[0], updates=10)
    check_grid_figure(fig, "GRPO", "averaging", ["batch_steps", "constant"], seeds=[0], updates=10)
    plt.close(fig)


def _legend_text(ax, i, text):
    ax.get_legend().get_texts()[i].set_text(text)


# What the check used to let pass: it read the second curve's scores and the first label's prefix.
@pytest.mark.parametrize("mutate", [
    lambda ax: ax.lines[0].set_ydata(ax.lines[1].get_ydata()),          # the first value's curve
    lambda ax: ax.lines[0].set_xdata(ax.lines[0].get_xdata() + 1),       # drawn at other updates
    lambda ax: _legend_text(ax, 0, "lr = 0.25: final 0.999"),            # a wrong final score
    lambda ax: ax.lines[1].set_label("lr = 2: final 0.319"),             # another value
    lambda ax: _legend_text(ax, 3, "untrained"),                         # a level left out
], ids=["first-curve", "updates", "final-score", "second-label", "reference-label"])
def test_a_grid_figure_showing_other_curves_or_labels_fails(mutate):
    fig = live.grid_figure("PPO", "lr", [0.25, 1.0], seeds=[0, 1], updates=20)
    mutate(fig.axes[0])
    with pytest.raises(AssertionError):
        check_grid_figure(fig, "PPO", "lr", [0.25, 1.0], seeds=[0, 1], updates=20)
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
