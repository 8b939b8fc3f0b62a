"""The tests' offline stand-in for a Hugging Face model: a tiny random Qwen2 causal LM and a
character tokenizer, both built here (no download). ``bench/bench_grpo_math.py`` borrows it."""
import torch

TINY_CHARS = "0123456789+-*/=()#.,:?!$'<> \nabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tiny_causal_lm(seed: int = 0, hidden: int = 32, layers: int = 2):
    """A tiny random Qwen2 causal LM, initialised from ``seed``, and its character tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<unk>", *TINY_CHARS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    config = Qwen2Config(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, pad_token_id=0, bos_token_id=1,
                         eos_token_id=1, tie_word_embeddings=True)
    torch.manual_seed(seed)               # transformers initialises from torch's global generator
    return Qwen2ForCausalLM(config).float(), tokenizer


def saved_tiny_causal_lm(directory, seed: int = 0):
    """``tiny_causal_lm(seed)`` saved to ``directory``, the way TRL's ``GRPOTrainer`` takes a model
    (it loads the policy, and the reference beside it, from the path); returns the tokenizer."""
    model, tokenizer = tiny_causal_lm(seed=seed)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return tokenizer
