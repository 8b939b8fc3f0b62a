"""GRPO from scratch: the shared code behind the book's chapters.

Modules:
    lava     the lava-leap game: floors, sensors, the softmax policy, play, exact evaluation
    algos    REINFORCE, PPO with a critic and GRPO, sharing one clipped update (chapters 2-4)
    kl       the k1/k2/k3 KL estimators for NumPy and torch (chapter 5 onward)
    surrogate the torch clipped surrogate that PPO and GRPO share (chapters 6 and 8)
    lander   LunarLander-v3: rollouts, evaluation, PPO / A2C / GRPO (outcome and process) in torch
    plots    the book's figure style, palette, floor drawings and animations
    display  showing lib source and computed tables in the chapters
    results  each chapter's headline figures in data/results/
    live     slider panels for chapters 2-4 (Jupyter) and their static grid figures (the book)
    reproduction  published figures (data/published.json) against the registry: the report's verdicts
    colab    the chapters' first cell: installs the lib when a notebook runs outside the repo
"""
__version__ = "0.1.0"
