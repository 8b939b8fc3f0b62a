"""A small byte-pair-encoding (BPE) tokenizer, trained locally with Hugging Face ``tokenizers``.

Digits are split one by one (``48`` is ``4``, ``8``), so the model sees the same tokens in every
number and must learn arithmetic digit by digit, as GSM8K-era BPE models with split digits do.
Spaces are kept as a marker ``▁`` in front of a word (SentencePiece's Metaspace), newlines are
tokens of their own, and decoding gives back the exact text.

    tok = Tokenizer.train(texts, vocab_size=512)
    ids = tok.encode("Mia has 12 apples.")      # list[int]; unknown characters raise ValueError
    tok.decode(ids) == "Mia has 12 apples."
    tok.save("data/models/tokenizer.json"); Tokenizer.load(...)

Special tokens: ``<pad>`` (id 0), ``<eos>`` (id 1, ends every answer), ``<unk>`` (id 2, never
returned by ``encode``).
"""
from __future__ import annotations


from tokenizers import Regex
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from grpo.files import write_text_atomically

SPECIALS = ["<pad>", "<eos>", "<unk>"]


class Tokenizer:
    """BPE with single digits. ``encode`` / ``decode``
    round-trip any text made of known characters."""

    def __init__(self, hf: HFTokenizer):
        self.hf = hf
        self.pad_id, self.eos_id, self.unk_id = (hf.token_to_id(t) for t in SPECIALS)
        if (self.pad_id, self.eos_id, self.unk_id) != (0, 1, 2):
            raise ValueError("tokenizer must have <pad>, <eos>, <unk> as ids 0, 1, 2")

    @classmethod
    def train(cls, texts, vocab_size: int = 512) -> "Tokenizer":
        """Learn BPE merges from ``texts`` up to
        ``vocab_size`` tokens (fewer if the text saturates)."""
        if vocab_size < 16:
            raise ValueError(f"vocab_size must be >= 16, got {vocab_size}")
        hf = HFTokenizer(models.BPE(unk_token="<unk>"))
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex("\n"), behavior="isolated"),
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True),
            pre_tokenizers.Digits(individual_digits=True),
        ])
        hf.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="never", split=True)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                      show_progress=False)
        hf.train_from_iterator(list(texts), trainer=trainer)
        return cls(hf)

    @classmethod
    def load(cls, path) -> "Tokenizer":
        return cls(HFTokenizer.from_file(str(path)))

    @classmethod
    def from_str(cls, text: str) -> "Tokenizer":
        """The tokenizer ``to_str`` wrote (what a worker process is handed)."""
        return cls(HFTokenizer.from_str(text))

    def to_str(self) -> str:
        return self.hf.to_str(pretty=True)

    def save(self, path) -> None:
        write_text_atomically(path, self.to_str() + "\n")

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added). A
        character never seen in training raises."""
        if not isinstance(text, str):
            raise ValueError(f"encode takes a str, got {type(text).__name__}")
        enc = self.hf.encode(text, add_special_tokens=False)
        if self.unk_id in enc.ids:
            bad = sorted({text[a:b] for i, (a, b) in zip(enc.ids, enc.offsets) if i == self.unk_id})
            raise ValueError(f"unknown characters for this tokenizer: {bad}")
        return enc.ids

    def decode(self, ids) -> str:
        """Text of ``ids``; ``<pad>`` and ``<eos>`` are dropped."""
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True)

    def tokens(self, text: str) -> list[str]:
        """The token strings of ``text`` (for showing how a problem is cut)."""
        return [self.hf.id_to_token(i) for i in self.encode(text)]
