"""One figure style for the whole book: fonts, a fixed colour per algorithm, floor drawings."""
from __future__ import annotations

import hashlib
import re

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML
from matplotlib.animation import FuncAnimation
from matplotlib.patches import Rectangle

from grpo.toy.lava import EXIT, N_TILES, check_floor, exact_score, play_group

# Okabe-Ito colour-blind-safe palette; an algorithm keeps its colour in every chapter.
COLORS = {
    "REINFORCE": "#E69F00",
    "PPO": "#0072B2",
    "GRPO": "#009E73",
    "untrained": "#999999",
    "ceiling": "#000000",
    "k1": "#CC79A7",
    "k2": "#56B4E9",
    "k3": "#009E73",
    "lava": "#D55E00",
    "safe": "#F3EEE3",
    "exit": "#56B4E9",
    "path": "#0072B2",
    "batch_steps": "#009E73",      # chapter 4: how the update averages over steps
    "per_answer": "#CC79A7",
    "constant": "#56B4E9",
    "A2C": "#CC79A7",
    "GRPO process": "#D55E00",
    "GRPO, V(s) baseline": "#6A3D9A",   # chapter 6's control (purple: apart from PPO's blue)
    # chapter 11's four readings of an answer
    "right": "#009E73",
    "slip": "#E69F00",
    "other_calculation": "#56B4E9",
    "no_equation": "#BBBBBB",
}


# Every figure is drawn at DPI, and no text in it is smaller than MIN_FONT_PT (tests/test_plots.py
# scans the chapters and the library for smaller sizes). The browser test turns the pair into the
# smallest text a reader sees: MIN_FONT_PT * DPI / 72 px, times the shown / drawn width, >= 9 px.
DPI = 110
MIN_FONT_PT = 8


def use_book_style() -> None:
    """Apply the book's matplotlib style (call once at the top of a chapter)."""
    mpl.rcParams.update({
        "figure.dpi": DPI,
        "savefig.dpi": DPI,
        "figure.figsize": (7.5, 3.6),
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "legend.fontsize": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.25,
        "animation.embed_limit": 40.0,   # MB, for to_jshtml
    })


def draw_floor(ax, floor, y: float = 0.0, label: str | None = None) -> None:
    """Draw one floor as a row of tiles at height ``y``: lava orange, the exit dock blue."""
    floor = check_floor(floor)
    for t in range(N_TILES):
        color = COLORS["lava"] if floor[t] else (COLORS["exit"] if t == EXIT else COLORS["safe"])
        ax.add_patch(Rectangle((t - 0.5, y - 0.4), 1, 0.8, facecolor=color,
                               edgecolor="white", linewidth=0.8))
    if label is not None:
        ax.text(-1.0, y, label, ha="right", va="center", fontsize=9)
    ax.set_xlim(-0.7, N_TILES + 2.5)
    ax.set_aspect("equal")
    ax.set_yticks([])
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)


def draw_run(ax, run, y: float = 0.0, color: str | None = None) -> None:
    """Draw a run as hops above its floor: arcs for moves, a cross on the tile it died on."""
    color = color or COLORS["path"]
    path = np.asarray(run.path)
    for a, b in zip(path[:-1], path[1:]):
        xs = np.linspace(a, b, 12)
        height = 0.35 + 0.18 * (b - a)
        ax.plot(xs, y + 0.45 + height * np.sin(np.pi * (xs - a) / (b - a)), color=color, lw=1.2)
    ax.plot(path[:-1], np.full(len(path) - 1, y + 0.45), "o", color=color, ms=3)
    end = path[-1]
    if run.exited:
        ax.plot([end], [y + 0.45], "*", color=color, ms=11)
    else:
        ax.plot([end], [y], "X", color="black", ms=9)


def draw_runs(ax, floor, runs, labels=None, color: str | None = None, spacing: float = 1.9) -> None:
    """Draw ``runs`` of one floor stacked top to bottom, each above its own copy of the floor.

    ``labels`` (one per run, default "score 0.xxx") are written left of each floor.
    """
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: nothing to draw")
    if labels is None:
        labels = [f"score {run.score:.3f}" for run in runs]
    labels = list(labels)
    if len(labels) != len(runs):
        raise ValueError(f"need one label per run: {len(runs)} runs, {len(labels)} labels")
    for i, (run, label) in enumerate(zip(runs, labels)):
        draw_floor(ax, floor, y=-spacing * i, label=label)
        draw_run(ax, run, y=-spacing * i, color=color)
    ax.set_ylim(-spacing * (len(runs) - 1) - 0.6, 1.6)
    ax.set_xticks(range(0, N_TILES, 5))
    ax.set_xlabel("tile")


def _policy_color(label: str) -> str:
    """A policy label's colour: grey for "untrained", else the first algorithm named in it."""
    if "untrained" in label.lower():
        return COLORS["untrained"]
    for algo in ("GRPO", "PPO", "REINFORCE"):
        if algo in label:
            return COLORS[algo]
    return COLORS["path"]


def before_after_runs(floor, policies, G: int = 8, seed: int = 0):
    """One panel per policy, one above the other: its G runs of ``floor`` stacked; returns the
    Figure.

    ``policies`` maps a label (e.g. "untrained", "GRPO, trained") to a weight matrix W (4, 2) or a
    LEAP table (8,). Every policy plays with the same generator seed, so the panels differ only by
    the policy. Each panel's title gives the policy's exact expected score on this floor.
    """
    floor = check_floor(floor)
    if not isinstance(policies, dict) or not policies:
        raise ValueError("policies must be a non-empty dict {label: W}")
    if isinstance(G, bool) or int(G) != G or G < 1:
        raise ValueError(f"G must be a positive integer, got {G!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    panel_height = 9.0 * (1.9 * int(G) + 0.4) / 44 + 0.5       # equal-aspect tiles, 9 in wide
    fig, axes = plt.subplots(len(policies), 1, figsize=(9, panel_height * len(policies)),
                             squeeze=False)
    for ax, (label, W) in zip(axes[:, 0], policies.items()):
        runs = play_group(floor, W, int(G), np.random.default_rng(int(seed)))
        draw_runs(ax, floor, runs, color=_policy_color(str(label)))
        expected = float(exact_score(floor, W).score)
        ax.set_title(f"{label}: expected score {expected:.3f}", fontsize=10)
    fig.tight_layout()
    return fig


def animate_run(floor, run, interval: int = 450) -> FuncAnimation:
    """A run stepped move by move, for ``to_jshtml()``: the bot, its sensors and its move."""
    floor = check_floor(floor)
    fig, ax = plt.subplots(figsize=(8.5, 1.9))
    draw_floor(ax, floor)
    ax.set_ylim(-0.7, 2.1)
    ax.set_xticks(range(0, N_TILES, 5))
    bot, = ax.plot([], [], "o", color=COLORS["path"], ms=11, zorder=5)
    trail, = ax.plot([], [], "-", color=COLORS["path"], lw=1, alpha=0.5)
    sensed = [ax.add_patch(Rectangle((0, -0.45), 1, 0.9, fill=False, lw=2, ec="black"))
              for _ in range(3)]
    title = ax.set_title("")
    path = np.asarray(run.path)

    def frame(i):
        pos = path[i]
        bot.set_data([pos], [0.9])
        trail.set_data(path[: i + 1], np.full(i + 1, 0.9))
        for j, box in enumerate(sensed):
            box.set_x(pos + j + 0.5)
            box.set_visible(i < len(run.moves))
        if i < len(run.moves):
            reading = "".join("L" if v else "." for v in run.sensors[i][:3])
            title.set_text(f"move {i + 1}: on tile {pos}, sensors read {reading!r} "
                           f"-> {('STEP', 'LEAP')[run.moves[i]]}")
        elif run.exited:
            title.set_text(f"reached the exit dock: score {run.score:.3f}")
        else:
            title.set_text(f"landed on lava at tile {pos}: score {pos}/39 = {run.score:.3f}")
        return bot, trail, title, *sensed

    anim = FuncAnimation(fig, frame, frames=len(path), interval=interval, blit=False)
    plt.close(fig)
    return anim


# the flown landers' animations draw small, to keep a page's frames small; their titles at
# FLIGHT_TITLE_PT stay above the browser test's 9 px floor (tests/test_plots.py checks it)
FLIGHT_FRAME_DPI, FLIGHT_TITLE_PT = 64, 10.5


def animate_flights(flights, titles, max_frames: int = 40, interval: int = 100) -> FuncAnimation:
    """Flights side by side, for ``to_jshtml()``: ``flights`` are each a sequence of RGB frames
    (``grpo.lander.fly``), ``titles`` one per flight; every k-th frame, so that the longest flight
    takes at most ``max_frames``, and a finished flight holds its last frame."""
    if not len(flights) or len(flights) != len(titles):
        raise ValueError(f"need one title per flight and at least one flight, got {len(flights)} "
                         f"flights and {len(titles)} titles")
    if min(len(f) for f in flights) < 1 or max_frames < 1:
        raise ValueError("every flight needs a frame, and max_frames must be at least 1")
    n = max(len(f) for f in flights)
    stride = max(1, -(-n // max_frames))
    fig, axes = plt.subplots(1, len(flights), figsize=(2.2 * len(flights), 2.0),
                             dpi=FLIGHT_FRAME_DPI)
    images = []
    for ax, f, t in zip(np.atleast_1d(axes), flights, titles):
        images.append(ax.imshow(f[0]))
        ax.set_title(t, fontsize=FLIGHT_TITLE_PT)
        ax.axis("off")
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.74, wspace=0.04)

    def frame(k):
        for im, f in zip(images, flights):
            im.set_data(f[min(k * stride, len(f) - 1)])
        return images

    anim = FuncAnimation(fig, frame, frames=-(-n // stride), interval=interval, blit=False)
    plt.close(fig)
    return anim


def plot_seed_curves(ax, runs, label: str | None = None, color: str | None = None,
                     ls: str = "-") -> None:
    """The seed-mean test-score curve of ``algos.SeedRuns``, with a band from the lowest to the
    highest seed."""
    color = color or COLORS.get(runs.algo, "black")
    curves = runs.curves
    x = runs.eval_updates
    ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.18, lw=0)
    ax.plot(x, curves.mean(axis=0), color=color, ls=ls, lw=1.8,
            label=label if label is not None else f"{runs.algo} (mean of {len(curves)} seeds)")
    ax.set_xlabel("update")
    ax.set_ylabel("exact test score (200 floors)")


def curve_axes(ax, ceiling: float, untrained: float, ylim=(0.25, 0.62)) -> None:
    """A learning-curve panel's reference lines: the best possible score and the untrained bot's."""
    for name, value in (("ceiling", ceiling), ("untrained", untrained)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite score, got {value!r}")
    ax.axhline(ceiling, color=COLORS["ceiling"], ls=":", lw=1.2,
               label=f"best possible {ceiling:.3f}")
    ax.axhline(untrained, color=COLORS["untrained"], ls="--", lw=1,
               label=f"untrained {untrained:.3f}")
    ax.set_ylim(*ylim)


FOUR_WAY_LABELS = {"right": "(d) the problem's calculation, true",
                   "slip": "(c) the problem's calculation, false",
                   "other_calculation": "(b) another calculation",
                   "no_equation": "(a) no equation"}


def four_way_bars(ax, rows: dict) -> None:
    """One horizontal bar per row (label -> the share of each of ``FOUR_WAY_LABELS``' readings,
    summing to 1), stacked right (d), slip (c), another calculation (b), no equation (a), with
    each share of 5% or more written on its segment; the first row on top."""
    if not rows:
        raise ValueError("rows must name at least one bar")
    for label, shares in rows.items():
        if set(shares) != set(FOUR_WAY_LABELS) or abs(sum(shares.values()) - 1) > 1e-6:
            raise ValueError(f"row {label!r} must give the four shares {list(FOUR_WAY_LABELS)}, "
                             f"summing to 1; got {shares}")
    labels = list(rows)
    for y, label in enumerate(labels):
        left = 0.0
        for key in FOUR_WAY_LABELS:
            width = rows[label][key]
            ax.barh(y, width, left=left, color=COLORS[key], edgecolor="white", height=0.7,
                    label=FOUR_WAY_LABELS[key] if y == 0 else None)
            if width >= 0.05:
                ax.text(left + width / 2, y, f"{100 * width:.0f}", ha="center", va="center",
                        fontsize=8)
            left += width
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the held-out answers (numbers in %)")
    ax.grid(False)


def animation_html(anim: FuncAnimation, name: str, alt: str) -> HTML:
    """``anim.to_jshtml()`` with a stable element id derived from ``name`` (unique per page), and
    ``alt`` on its frame: what the animation shows, for a reader who cannot see it.

    matplotlib names the player's elements with a random uuid, so every re-run would change the
    stored notebook; a stable id keeps ``make execute`` free of noise diffs.
    """
    if not name:
        raise ValueError("name must be a non-empty string, unique among a page's animations")
    if not isinstance(alt, str) or len(alt.split()) < 3:
        raise ValueError(f"alt must say in words what the animation shows, got {alt!r}")
    html = anim.to_jshtml()
    found = re.search(r"_anim_img([0-9a-f]{32})", html)
    if found is None:
        raise ValueError("not a matplotlib to_jshtml() player")
    html = html.replace(found.group(1), hashlib.md5(name.encode()).hexdigest())
    quoted = alt.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return HTML(re.sub(r'(<img id="_anim_img[0-9a-f]{32}")', rf'\1 alt="{quoted}"', html, count=1))
