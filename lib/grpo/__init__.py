"""GRPO from scratch: the shared code behind the book's chapters.

Three layers, imports pointing down, never up (``tests/test_layout.py`` enforces it):

experiments/  one package per chapter: the ``python -m`` entry points that write ``data/runs/``;
              and ``hf_cli``, GRPO on a Hugging Face model from the command line
runstore      the one run store: paths, atomic JSON and weights, loading, CPU timing, the CLI, and
              the facts chapters share about stored runs (chapter 7's checkpoint, chapter 9's jobs)
book/         the pages' helpers: display, plots, live panels, the results registry, the
              reproduction report, the Colab cell, the machine fingerprint
the library:
    toy/        the lava-leap game (``lava``) and REINFORCE, PPO and GRPO on it (``algos``)
    lander/     LunarLander-v3 (chapter 6): env and evaluation, losses, trainers, report
    lm/         the small language model of chapters 7-11, GRPO on it, and the Hugging Face adapter
    objectives  the NumPy pieces every chapter shares: grpo_advantages, clip_mask, log_softmax
    surrogate   the torch clipped surrogate that PPO and GRPO share (chapters 6 and 8)
    mlp         chapter 6's small networks run forward and backward in NumPy, and their Adam
    kl          the k1/k2/k3 KL estimators for NumPy and torch (chapter 5 onward)
    stats       paired lifts with confidence intervals
    checks      one way to check an argument (a ValueError naming it)
    seeding     the one way to make a seeded generator (the library never seeds a global one)
    pool        spawned worker processes, results in input order
    files       atomic writes (a reader never sees half a file) and exact JSON conversion

House rules, inside the library (``tests/test_layout.py`` checks those an import can break):
- the games know no learner: ``toy.lava`` and ``lander.env`` import no trainer;
- the model knows no trainer and no task: ``lm.model`` and ``lm.tokenizer`` import neither a loop,
  nor ``data``, nor the core's learning pieces (only ``checks``, ``files``, ``seeding``);
- the lander and the language model never import each other; they share only the core;
- the library has no command line and no global random state, and times in CPU seconds; every
  time key names its clock (``…_cpu_s``, ``…_wall_s``: ``tests/test_clocks.py``);
- one home per name, and one import path: a package that names its surface in its ``__init__``
  (``grpo.lander``) is imported from there; no module reaches another's private names;
- one GRPO loop for language models: ``lm.rl.grpo_iteration`` (``tests/test_one_lm_loop.py``).
"""
__version__ = "0.1.0"
