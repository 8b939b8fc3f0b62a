"""GRPO from scratch: the shared code behind the book's chapters.

Modules (imports point down this list, never up):
    lava        the lava-leap game: floors, sensors, the softmax policy, play, exact evaluation
    algos       REINFORCE, PPO with a critic and GRPO, sharing one clipped update (chapters 2-4)
    lander      LunarLander-v3 (chapter 6), a package: env and evaluation, objectives, trainers,
                report, and ``python -m grpo.lander``
    lm          the small language model of chapters 7-10 (see ``grpo.lm``)
    objectives  the NumPy pieces every chapter shares: grpo_advantages, clip_mask, log_softmax
    surrogate   the torch clipped surrogate that PPO and GRPO share (chapters 6 and 8)
    mlp         chapter 6's small networks run forward and backward in NumPy, and their Adam
    kl          the k1/k2/k3 KL estimators for NumPy and torch (chapter 5 onward)
    stats       paired lifts with confidence intervals
    checks      one way to check an argument (a ValueError naming it)
    pool        spawned worker processes, results in input order
    files       atomic writes: a reader never sees half a file
    machine     the machine's fingerprint, which ``make test`` prints first
    plots       the book's figure style, palette, floor drawings and animations
    display  showing lib source and computed tables in the chapters
    results  each chapter's headline figures in data/results/
    live     slider panels for chapters 2-4 (Jupyter) and their static grid figures (the book)
    reproduction  published figures (data/published.json) against the registry: the report's
    verdicts
    colab    the chapters' first cell: installs the lib when a notebook runs outside the repo
"""
__version__ = "0.1.0"
