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
                        shared with chapter 12)
    ch10_word_problems  long_runs (the lr sweep, its variants, expert iteration, practice, plateau)
    ch11_pretrained     smollm2_runs (GRPO and its controls on SmolLM2-135M), trl_launch (the same
                        recipe through TRL's GRPOTrainer, from trl_launch.yaml)
    ch12_practice       failure_runs (the failures' addition grids and the loss-aggregation runs)
    hf_cli              not a chapter's: ``grpo.lm.hf.train_hf_grpo`` on GSM8K from the command
                        line (the library has none), storing nothing
"""
