"""The experiments: one package per chapter, each producing that chapter's stored runs.

Each module here is a ``python -m grpo.experiments.chNN_name.module`` entry point that writes
``data/runs/`` (and, for chapter 7, the checkpoints in ``data/models/``) through the one run store,
``grpo.runstore``, and reads them back for its chapter. Experiments import the library (``grpo.lm``,
``grpo.lander``, ``grpo.toy`` and the core modules), the run store and the book helpers; nothing in
the library imports an experiment (``tests/test_layout.py``).

    ch06_lander         main_runs (the fifteen PPO/GRPO/A2C/... runs), credit_study (the
                        credit-assignment ladder and ablations), gradient_noise (K batches at
                        frozen checkpoints),
                        published_scale (the published 5 x 2M env steps, not stored)
    ch07_small_lm       sft_run (the worked-solution model), answer_only (its control)
    ch08_grpo_math      main_runs (GRPO two seeds, the continued-SFT control, the start)
    ch09_addition       grids (the chapter's grids of short jobs; the jobs, the SFT run they start
                        from and their storage are the run store's, ``grpo.runstore.addition_jobs``,
                        shared with chapter 12), readings (what the chapter and its lab notes read
                        from them, and the chapter's results file)
    ch10_word_problems  long_runs (the lr sweep, its variants, expert iteration, practice, plateau),
                        readings (what the chapter and its lab notes read from them, and the
                        chapter's results file)
    ch11_pretrained     smollm2_runs (the first runs: GRPO and its controls on SmolLM2-135M),
                        design (the two designs, committed before their runs), format_runs (the
                        first design's runs and readings), four_way_runs (the second design's),
                        registry (what the three share: GRPO from a list of prompts, a registry's
                        runs stored, re-trained, read and replayed), trl_launch (the same recipe
                        through TRL's GRPOTrainer, from trl_launch.yaml)
    ch12_practice       failure_runs (the failures' addition grids and the loss-aggregation runs)
    hf_cli              not a chapter's: ``grpo.lm.hf.train_hf_grpo`` on GSM8K from the command
                        line (the library has none), storing nothing

A run's specification comes in three kinds, one word each; every class below is one of them, and
``tests/test_names.py`` holds every registry and every trainer's settings to this list:

    config          a trainer's settings, frozen and checked at construction, stored as its fields
                    (so a stored run names what it ran): ``grpo.lm.rl.RunConfig`` (GRPO on our
                    GPT, with what it measures in a part of its own, ``grpo.lm.eval.EvalConfig``),
                    ``grpo.lm.hf.HFConfig`` (on a Hugging Face model),
                    ``grpo.lm.rl.EIConfig``, ``grpo.lm.train.SFTConfig``,
                    ``grpo.lander.ActorCriticConfig``,
                    ``grpo.lander.LanderGRPOConfig``, ``grpo.toy.algos.ReinforceConfig``,
                    ``grpo.toy.algos.ToyPPOConfig``, ``grpo.toy.algos.ToyGRPOConfig``
    run spec        a config with what it runs on, where a chapter varies that too:
                    ``grpo.lander.RunSpec`` (an algorithm, a seed, an env-step budget and
                    the algorithm's config), ``grpo.runstore.addition_jobs.Job`` (a start
                    checkpoint and a config, or none: the start evaluated)
    registry entry  one named run of an experiment's ``RUNS``: its kind and what picks its config
                    from the experiment's one recipe, so that ``python -m`` can list and run it by
                    name: ``grpo.experiments.ch10_word_problems.long_runs.LongRun``,
                    ``grpo.experiments.ch11_pretrained.smollm2_runs.Spec`` (a kind, a seed, a
                    reward), ``grpo.experiments.ch11_pretrained.format_runs.DecidedRun`` (a prompt,
                    an arm of ``design.DESIGN``, a seed) and
                    ``grpo.experiments.ch11_pretrained.four_way_runs.FourWayRun`` (the same for
                    ``design.FOUR_WAY_DESIGN``); each differs by what its experiment varies
"""
