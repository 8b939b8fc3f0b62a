"""The small language model of chapters 7-8: grade-school math on a CPU.

Modules:
    data       GSM8K-style problem generator, the answer verifier and safe annotation checker,
               jsonl loaders for generated files and the real GSM8K (local files or the HF hub)
    tokenizer  a byte-pair-encoding tokenizer trained locally, digits split one by one
    model      the decoder (nanoGPT-style, one file), the KV-cache sampler with per-token
               log-probs, greedy decoding, token_logprobs, safetensors checkpoints
    train      supervised fine-tuning (SFT) on solution tokens with packed sequences, evaluation
"""
