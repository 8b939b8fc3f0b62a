"""Live experiments for chapters 2-4: a slider panel that re-trains as you move it, and the static
grid of curves that stands beside it in the book.

A training run on the toy takes a fraction of a second, so a panel can re-run the chapter's
protocol (``algos.run_seeds``) on every change and redraw the test-score curve against the
ceiling. The static book cannot run callbacks: there ``grid_figure`` draws the same curves for a
few precomputed values of one knob. In a chapter, the widget cell carries the
``nbval-ignore-output`` tag and prints no result; the grid figure beside it is an ordinary, checked
output.

    from grpo.book import live
    live.panel("GRPO")                                     # Jupyter only
    live.grid_figure("GRPO", "eps", [0.05, 0.2, 0.5])      # the static book
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgb

from grpo.toy import algos, lava
from .plots import COLORS, curve_axes

# The knobs each chapter's panel offers: (widget kind, min, max, step, default)
KNOBS = {
    "lr": ("log", -2.0, 0.5, 0.1, 0.5),          # 10**-2 .. 10**0.5, default 0.5
    "G": ("int", 2, 32, 1, 8),
    "eps": ("float", 0.02, 1.0, 0.02, 0.2),
    "passes": ("int", 1, 8, 1, 4),
}
ALGO_KNOBS = {
    "REINFORCE": ("lr", "G"),
    "PPO": ("lr", "G", "eps", "passes"),
    "GRPO": ("lr", "G", "eps", "passes"),
}
# The choices each panel offers by default: how GRPO averages its update over steps
# (``algos.step_divisors``), and whether PPO normalises its advantages per batch.
DEFAULT_CHOICES = {
    "REINFORCE": {},
    "PPO": {"adv_norm": [False, True]},
    "GRPO": {"averaging": list(algos.AVERAGING)},
}
CONFIGS = {"REINFORCE": algos.ReinforceConfig, "PPO": algos.ToyPPOConfig,
           "GRPO": algos.ToyGRPOConfig}


def _check_algo(algo):
    if algo not in ALGO_KNOBS:
        raise ValueError(f"algo must be one of {sorted(ALGO_KNOBS)}, got {algo!r}")


def _check_seeds(seeds):
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or int(s) != s or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of non-negative integers, got {seeds!r}")
    return [int(s) for s in seeds]


def reference_lines(ax) -> None:
    """The chapters' learning-curve reference lines (``plots.curve_axes``) for the test floors."""
    ceiling = lava.ceiling().score
    untrained = float(lava.exact_score(lava.held_out_floors(), np.zeros((4, 2))).mean_score)
    curve_axes(ax, ceiling, untrained, ylim=(min(0.25, untrained - 0.02), ceiling + 0.03))


def train_curves(algo: str, seeds=(0, 1, 2), updates: int = 300, **hparams) -> algos.SeedRuns:
    """The chapter's protocol for ``algo`` with ``hparams`` changed, on ``seeds``."""
    _check_algo(algo)
    fields = set(CONFIGS[algo].__dataclass_fields__) - {"updates"}
    unknown = set(hparams) - fields
    if unknown:
        raise ValueError(f"{algo} has no knob(s) {sorted(unknown)}; it has {sorted(fields)}")
    return algos.run_seeds(algo, seeds=_check_seeds(seeds), updates=updates, **hparams)


def _shades(base: str, n: int):
    """n shades of one algorithm's colour, light to dark."""
    rgb = np.array(to_rgb(base))
    return [tuple((1 - a) + a * rgb) for a in np.linspace(0.35, 1.0, n)]   # blended with white


def grid_figure(algo: str, knob: str, values, seeds=(0, 1, 2), updates: int = 300, **fixed):
    """The static stand-in for a panel: one seed-mean curve per value of ``knob``, same axes.

    The other knobs keep the chapter's protocol values unless given in ``fixed``. Returns the
    Figure (the caller displays or glues it).
    """
    _check_algo(algo)
    knobs = (*ALGO_KNOBS[algo], *DEFAULT_CHOICES[algo])
    if knob not in knobs:
        raise ValueError(f"{algo}'s knobs are {knobs}, not {knob!r}")
    values = list(values)
    if not values:
        raise ValueError("values is empty: give at least one value of the knob")
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for value, shade in zip(values, _shades(COLORS.get(algo, "#333333"), len(values))):
        runs = train_curves(algo, seeds, updates, **{**fixed, knob: value})
        shown = value if isinstance(value, (str, bool)) else format(value, "g")
        ax.plot(runs.eval_updates, runs.curves.mean(axis=0), color=shade, lw=1.8,
                label=f"{knob} = {shown}: final {runs.final_scores.mean():.3f}")
    reference_lines(ax)
    ax.set_xlabel("update")
    ax.set_ylabel("exact test score (200 floors)")
    ax.set_title(f"{algo}: the mean of {len(list(seeds))} seeds for each {knob}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def _slider(knob):
    import ipywidgets as widgets
    kind, lo, hi, step, default = KNOBS[knob]
    common = dict(description=knob, continuous_update=False, style={"description_width": "4em"})
    if kind == "log":
        return widgets.FloatLogSlider(value=default, base=10, min=lo, max=hi, step=step,
                                      readout_format=".3g", **common)
    if kind == "int":
        return widgets.IntSlider(value=default, min=lo, max=hi, step=step, **common)
    return widgets.FloatSlider(value=default, min=lo, max=hi, step=step, readout_format=".2f",
                               **common)


def panel(algo: str, seeds=(0, 1, 2), updates: int = 300, choices: dict | None = None):
    """An ipywidgets panel for ``algo``: sliders for its knobs, re-training on every change.

    ``choices`` maps a config field to its options, one dropdown each (default
    ``DEFAULT_CHOICES[algo]``: GRPO's ``averaging``, PPO's ``adv_norm``). Returns the widget (show
    it as a cell's last expression). Each change re-runs the protocol on ``seeds`` and redraws the
    seed-mean curve, with the lowest-to-highest band, against the ceiling.
    """
    import ipywidgets as widgets
    _check_algo(algo)
    seeds = _check_seeds(seeds)
    controls = {knob: _slider(knob) for knob in ALGO_KNOBS[algo]}
    for name, options in (DEFAULT_CHOICES[algo] if choices is None else choices).items():
        options = list(options)
        if not options:
            raise ValueError(f"choices[{name!r}] is empty")
        controls[name] = widgets.Dropdown(options=options, value=options[0], description=name,
                                          style={"description_width": "5em"})
    out = widgets.Output()
    status = widgets.HTML()

    def redraw(*_):
        hparams = {name: w.value for name, w in controls.items()}
        runs = train_curves(algo, seeds, updates, **hparams)
        color = COLORS.get(algo, "black")
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(7.5, 3.4))
            curves = runs.curves
            ax.fill_between(runs.eval_updates, curves.min(axis=0), curves.max(axis=0),
                            color=color, alpha=0.18, lw=0)
            ax.plot(runs.eval_updates, curves.mean(axis=0), color=color, lw=1.8,
                    label=f"{algo}, mean of {len(seeds)} seeds")
            reference_lines(ax)
            ax.set_xlabel("update")
            ax.set_ylabel("exact test score (200 floors)")
            ax.legend(loc="lower right", fontsize=8)
            fig.tight_layout()
            plt.show()
        ceiling = lava.ceiling().score
        status.value = (f"final score {runs.final_scores.mean():.3f} = "
                        f"{100 * runs.final_scores.mean() / ceiling:.1f}% of the ceiling")

    for w in controls.values():
        w.observe(redraw, names="value")
    box = widgets.VBox([widgets.HBox(list(controls.values())[:2]),
                        widgets.HBox(list(controls.values())[2:]), status, out])
    box.redraw = redraw                         # for tests and for a manual refresh
    redraw()
    return box
