"""What the Encoder page proves: a masked-LM encoder fills agreement verbs and pronouns from both sides."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import checkpoint, data
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.lessons.common import Fact
from viz_model.mlm import mask_words, run_masked
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import BOS, EOS, MASK, UNK

SINGULAR_VERBS = frozenset(v[0] for v in data.AGREE_VERBS)  # is, was, seems, looks
PLURAL_VERBS = frozenset(v[1] for v in data.AGREE_VERBS)    # are, were, seem, look
TWIN = {a: b for pair in data.AGREE_VERBS for a, b in (pair, pair[::-1])}  # is <-> are, was <-> were, ...
SHIPPED = "encoder-mlm"   # the shipped masked-LM encoder
DECODER = "classroom"     # the shipped causal decoder it is compared with
BANK = next(s for s in LECTURE_SENTENCES if "bank" in s.lower())  # "The bank by the river"
QUERY, KEY = "bank", "river"
MAX_TOP_K = 10             # fill-ins computed per mask; the page's top-k slider shows the first k
# (metadata key, what it measures, the quality bar)
METRICS = [
    ("agreement_number_top1", "Agreement across a distractor noun: the top-1 verb has the subject's number", "≥ 90 %"),
    ("agreement_pair_accuracy", "Agreement: p(right form) > p(its twin), e.g. are vs is", ""),
    ("pronoun_top1", "Pronoun fixed by its antecedent (gender, number, animacy): top-1 is right", "≥ 90 %"),
    ("random_mask_top1", "Random masked words (each word with p = 0.15): top-1 is the word", ""),
    ("random_mask_top5", "Random masked words: the word is among the top 5", ""),
]


@functools.lru_cache(maxsize=256)
def bidirectional(path: str, mtime: float) -> bool:
    """A TinyTransformer checkpoint trained without the causal mask (its JSON config says causal: false)."""
    try:
        doc = checkpoint.read_metadata(path)
    except (OSError, ValueError):
        return False
    return doc.get("kind", "transformer") == "transformer" and (doc.get("config") or {}).get("causal") is False


@dataclass(frozen=True)
class MaskedWord:
    """A held-out sentence (words) with one word to hide at `index` (a word index, no <bos>)."""

    words: tuple[str, ...]
    index: int

    @property
    def answer(self) -> str:
        return self.words[self.index]


@torch.no_grad()
def masked_probs(model: TinyTransformer, tokenizer, items: list[tuple[list[str], list[int]]]) -> list[torch.Tensor]:
    """For each (words, positions): the encoder's softmax (n_positions, V) with those words replaced by <mask>.

    Sequences are <bos> words <eos>, right-padded in one batch; padding keys are masked out.
    """
    bos, eos, pad, unk, mask_id = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<pad>", "<unk>", MASK))
    seqs = []
    for words, positions in items:
        ids = [_id(tokenizer, w, unk) for w in words]
        for p in positions:
            ids[p] = mask_id
        seqs.append([bos, *ids, eos])
    ids = data.pad_right(seqs, pad).to(model.device)  # (N, T)
    with eval_mode(model):
        logits = model(ids, key_padding_mask=ids != pad).logits.float()  # (N, T, V)
    probs = torch.softmax(logits, dim=-1).cpu()
    return [probs[i, [p + 1 for p in positions]] for i, (_, positions) in enumerate(items)]  # +1 for <bos>


def agreement_items(n: int = 200, seed: int = 0) -> list[MaskedWord]:
    """Held-out agreement sentences ('the keys near the dog are ready') with the verb to be masked."""
    out = []
    for text in data.heldout_sentences(n, seed=seed, kind="agreement"):
        words = tuple(text.split())
        out.append(MaskedWord(words, next(i for i, w in enumerate(words) if w in TWIN)))
    return out


def pronoun_items(n: int = 200) -> list[MaskedWord]:
    """Held-out pronoun sentences with the pronoun to be masked (its antecedent fixes it; so does its verb)."""
    return [MaskedWord(ex.words, ex.pronoun_index) for ex in data.pronoun_examples(n, split="heldout")]


def sentence_ids(tokenizer, words: list[str]) -> list[int]:
    """<bos> words <eos>, as the encoder reads a sentence (a word it does not know is <unk>)."""
    bos, eos, unk = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<unk>"))
    return [bos, *(_id(tokenizer, w, unk) for w in words), eos]


def _id(tokenizer, word: str, unk: int) -> int:
    i = tokenizer.token_to_id(word)
    return unk if i is None else i


# -- the Fill-in tab -------------------------------------------------------------------------------------
def default_masks(words: list[str]) -> list[int]:
    """Hide an agreement verb if the sentence has one (is/are, was/were, ...), else the first noun after 'the'
    or 'a' (the cat, the bank), else the second word: a blank with words on both sides."""
    low = [w.lower() for w in words]
    verbs = [i for i, w in enumerate(low) if w in TWIN]
    nouns = [i + 1 for i, w in enumerate(low[:-1]) if w in ("the", "a") and low[i + 1].isalpha()]
    return (verbs or nouns or [min(1, len(words) - 1)])[:1]


def masked_text(words: list[str], pieces: list[str], picked: list[int]) -> tuple[str, list[str | None]]:
    """The sentence the encoder reads (picked words -> <mask>) and the hidden word of each <mask>, in order
    (None for a <mask> typed in the text)."""
    text = mask_words(words, picked)
    answers = [pieces[i] if i in picked else None for i in range(len(words)) if i in picked or pieces[i] == MASK]
    return text, answers


def masked_run(model: TinyTransformer, tokenizer, text: str, top_k: int = MAX_TOP_K) -> dict:
    """One traced encoder pass: the labels (<unk> where the tokenizer read one), each mask's position, top-k
    fill-ins and full distribution, and every head's attention (L, H, T, T)."""
    run = run_masked(model, tokenizer, text, top_k=top_k, trace=True)
    unk = tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=text)


def fill_rows(tokenizer, run: dict, answers: list[str | None]) -> list[dict[str, str]]:
    """Per mask: the top fill-in, and where the hidden word ranks among all V words."""
    rows = []
    for n, (pos, fills, p, ans) in enumerate(zip(run["positions"], run["fills"], run["probs"], answers)):
        i = None if ans is None else tokenizer.token_to_id(ans)
        rows.append({"mask": f"{n + 1} (token {pos})", "top-1": fills[0][0], "p(top-1)": f"{fills[0][1]:.3f}",
                     "hidden word": "— (typed <mask>)" if ans is None else ans,
                     "p(hidden word)": "—" if i is None or ans == UNK else f"{p[i]:.3f}",
                     "its rank": ("not in the vocabulary" if ans == UNK else "—") if i is None or ans == UNK
                     else f"{int((p > p[i]).sum()) + 1} of {len(p)}"})
    return rows


def both_sides_facts(attention: np.ndarray, layer: int, head: int, positions: list[int]) -> list[Fact]:
    """Each <mask> puts some of its attention on the tokens after it in this head: (L, H, T, T) attention."""
    T = attention.shape[-1]
    out = []
    for n, p in enumerate(positions):
        later, after = float(attention[layer, head, p, p + 1:].sum()), T - 1 - p
        out.append(Fact(later > 0, f"`<mask>` {n + 1} (token {p}) puts {later:.3f} of its attention on the {after} "
                                   f"token{'' if after == 1 else 's'} after it in this head: it reads both sides. A "
                                   "causal decoder gets exactly 0 there."))
    return out


def row_sum_text(attention: np.ndarray) -> str:
    return f"Row sums: max |1 − sum| = {float(np.abs(attention.sum(-1) - 1).max()):.0e} over every head and query."


@dataclass
class AgreementResult:
    number_top1: float   # the top-1 word is a verb of the subject's number (is/was/seems/looks for one key)
    pair: float          # p(correct form) > p(its other-number twin): is vs are, was vs were, ...
    n: int


def agreement_accuracy(model: TinyTransformer, tokenizer, items: list[MaskedWord]) -> AgreementResult:
    """Subject-verb agreement across a distractor noun of the other number, the verb masked."""
    probs = masked_probs(model, tokenizer, [(list(it.words), [it.index]) for it in items])
    number = pair = 0
    for it, p in zip(items, probs):
        p = p[0]
        top = tokenizer.id_to_token(int(p.argmax()))
        same_number = SINGULAR_VERBS if it.answer in SINGULAR_VERBS else PLURAL_VERBS
        number += top in same_number
        pair += bool(p[tokenizer.token_to_id(it.answer)] > p[tokenizer.token_to_id(TWIN[it.answer])])
    return AgreementResult(number / len(items), pair / len(items), len(items))


def top1_accuracy(model: TinyTransformer, tokenizer, items: list[MaskedWord]) -> float:
    """Share of items whose hidden word is the encoder's top-1 prediction."""
    probs = masked_probs(model, tokenizer, [(list(it.words), [it.index]) for it in items])
    hits = [tokenizer.id_to_token(int(p[0].argmax())) == it.answer for it, p in zip(items, probs)]
    return sum(hits) / len(items)


def random_mask_accuracy(model: TinyTransformer, tokenizer, sentences: list[str], p: float = 0.15,
                         seed: int = 0) -> tuple[float, float, int]:
    """(top-1, top-5, n masked) over random positions: each word masked with probability p (at least one)."""
    rng = random.Random(seed)
    items = []
    for text in sentences:
        words = text.split()
        chosen = [i for i in range(len(words)) if rng.random() < p] or [rng.randrange(len(words))]
        items.append((words, chosen))
    top1 = top5 = n = 0
    for (words, chosen), probs in zip(items, masked_probs(model, tokenizer, items)):
        answers = torch.tensor([tokenizer.token_to_id(words[i]) for i in chosen])  # (k,)
        best = probs.topk(5, dim=-1).indices                                       # (k, 5)
        top1 += int((best[:, 0] == answers).sum())
        top5 += int((best == answers[:, None]).any(-1).sum())
        n += len(chosen)
    return top1 / n, top5 / n, n


def heldout_metrics(model: TinyTransformer, tokenizer, n: int = 200) -> dict[str, float | int]:
    """The shipped encoder's metadata: every number on sentences it never trained on."""
    agree = agreement_accuracy(model, tokenizer, agreement_items(n))
    top1, top5, n_random = random_mask_accuracy(model, tokenizer, data.corpus_split().heldout)
    return {"agreement_number_top1": agree.number_top1, "agreement_pair_accuracy": agree.pair,
            "pronoun_top1": top1_accuracy(model, tokenizer, pronoun_items(n)),
            "random_mask_top1": top1, "random_mask_top5": top5, "n_agreement": agree.n,
            "n_pronoun": n, "n_random_masked": n_random}



_OWN_VERBS = {verb: pron for pron, verb in data.NOUNS.values()}  # 'barked' -> 'it': the verb names the noun


def structural_items(split: str, n: int = 200, seed: int = 1) -> tuple[list[MaskedWord], list[MaskedWord]]:
    """(agreement, pronoun) items from grammar sentences of a structural split (data.structural_sentences): the
    first agreement verb of a sentence (its subject's number fixes it) and the first pronoun followed by its
    antecedent's own verb (that verb fixes it); up to n of each."""
    agree: list[MaskedWord] = []
    pron: list[MaskedWord] = []
    for text in data.structural_sentences(12 * n, split, seed=seed):
        words = tuple(text.split())
        verb = next((i for i, w in enumerate(words) if w in TWIN), None)
        if verb is not None and len(agree) < n:
            agree.append(MaskedWord(words, verb))
        p = next((i for i, w in enumerate(words[:-1]) if _OWN_VERBS.get(words[i + 1]) == w), None)
        if p is not None and len(pron) < n:
            pron.append(MaskedWord(words, p))
        if len(agree) == len(pron) == n:
            break
    return agree, pron


def structural_metrics(model: TinyTransformer, tokenizer, n: int = 200) -> dict[str, dict[str, float | int]]:
    """Agreement and pronoun fill-ins on grammar sentences never trained on, per structural split: of skeletons
    the encoder trained on ('seen') and of skeletons kept out of training ('unseen')."""
    out = {}
    for split in ("seen", "unseen"):
        agree_items, pron_items = structural_items(split, n)
        agree = agreement_accuracy(model, tokenizer, agree_items)
        out[split] = {"agreement_number_top1": agree.number_top1, "agreement_pair_accuracy": agree.pair,
                      "pronoun_top1": top1_accuracy(model, tokenizer, pron_items), "n_agreement": agree.n,
                      "n_pronoun": len(pron_items)}
    return out

@dataclass
class LookAhead:
    """'The bank by the river': how much `query` attends to `key` in each layer and head, (L, H)."""

    tokens: list[str]
    query_index: int
    key_index: int
    weight: torch.Tensor  # (L, H)


@torch.no_grad()
def attention_weight(model: TinyTransformer, tokenizer, text: str, query: str, key: str) -> LookAhead:
    """The attention weight from word `query` to word `key` (first occurrences) in every layer and head, on
    <bos> words <eos> as the encoder reads a sentence everywhere else (`masked_probs`, the Fill-in tab).

    A causal decoder gives exactly 0 when `key` comes after `query`; an encoder need not."""
    words = data.source_words(text)
    if query not in words or key not in words:
        raise ValueError(f"the sentence must contain both '{query}' and '{key}'.")
    ids = sentence_ids(tokenizer, words)
    with eval_mode(model):
        trace = model(torch.tensor([ids], device=model.device), trace=True).trace
    q, k = words.index(query) + 1, words.index(key) + 1  # +1 for <bos>
    weight = torch.stack([lt.probs[0, :, q, k] for lt in trace.layers]).float().cpu()  # (L, H)
    return LookAhead(["<bos>", *words, "<eos>"], q, k, weight)


def bank_ids(tokenizer, text: str) -> tuple[list[int], list[str], list[str]]:
    """<bos> + the sentence's word ids + <eos> in this tokenizer (as the Fill-in tab and attention_weight read it),
    the labels, and the words it does not know."""
    words = data.source_words(text)
    unknown = [w for w in words if tokenizer.token_to_id(w) is None]
    return sentence_ids(tokenizer, words), [BOS, *(UNK if w in unknown else w for w in words), EOS], unknown


def reading_mismatch(runs: dict[str, tuple]) -> str:
    """A warning when the models' tokenizers read the sentence differently ({name: bank_ids(...)}), else ''."""
    if len({tuple(labels) for _, labels, _ in runs.values()}) == 1 and not any(u for *_, u in runs.values()):
        return ""
    return ("The two models' tokenizers do not read this sentence the same way: "
            + "; ".join(f"{n}: {' '.join(lab)}" for n, (_, lab, _) in runs.items()))


def best_head(look: LookAhead, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The (layer, head) among the first n_layers × n_heads that puts the most weight on the key."""
    best = np.unravel_index(int(look.weight[:n_layers, :n_heads].argmax()), (n_layers, n_heads))
    return int(best[0]), int(best[1])


def query_row(probs: np.ndarray, allowed: np.ndarray, query: int, head) -> tuple[np.ndarray, np.ndarray]:
    """The query's attention over every key, (T,), in one head or the heads' mean ("mean"), from one layer's
    (H, T, T) probs, and which keys it may read, (T,), from the (T, T) allowed."""
    return (probs.mean(0)[query] if head == "mean" else probs[head, query]), allowed[query]


def y_top(rows) -> float:
    """One y scale for several bar charts of (weights, allowed) rows: a quarter above the largest weight."""
    return min(1.0, 1.25 * max(float(r.max()) for r, _ in rows)) + 0.02


def shown_weight(look: LookAhead, layer: int, head) -> tuple[str, str]:
    """(which head, the measured weight on the key as the page's metric writes it) in one head or their mean."""
    w = look.weight[layer].numpy()                                       # (H,)
    shown = float(w.mean() if head == "mean" else w[head])
    return ("mean of the heads" if head == "mean" else f"head {head}"), (f"{shown:.4f}" if shown else "0 (exactly)")


def look_ahead_facts(enc: LookAhead, dec: LookAhead) -> list[Fact]:
    """The encoder's query reads the key in every head; the causal decoder's puts exactly 0 on it in every head."""
    e, d = enc.weight.numpy(), dec.weight.numpy()                       # (L, H) each
    L, H = e.shape
    layer, head = np.unravel_index(int(e.argmax()), e.shape)
    return [Fact(float(e.min()) > 0, f"Encoder: “{QUERY}” can read “{KEY}” in every head: up to {e.max():.3f} of its "
                                     f"attention (layer {layer}, head {head}), {e.mean():.3f} on average over the "
                                     f"{L * H} heads, and no head gives it exactly 0 (smallest {e.min():.2g})."),
            Fact(float(d.max()) == 0.0, f"Causal decoder: “{QUERY}” puts exactly {float(d.max()):g} on “{KEY}” in "
                                        f"all {d.size} heads: “{KEY}” comes later, so the mask hides it.")]


def weight_rows(look: LookAhead) -> list[dict[str, str]]:
    """The query's weight on the key, one row per layer, one column per head."""
    return [{f"head {j}": f"{x:.4f}" for j, x in enumerate(row)} for row in look.weight.numpy()]


# -- the Held-out metrics tab --------------------------------------------------------------------------------
def pct(x) -> str:
    return "—" if x is None else f"{100 * float(x):.1f} %"


def metric_rows(meta: dict, live: dict | None) -> list[dict[str, str]]:
    """Each held-out measure as recorded when trained, recomputed now (when `live`), and its quality bar."""
    return [{"measure": what, "recorded when trained": pct(meta.get(key)),
             "recomputed now": pct(live.get(key)) if live else "press the button", "target": bar}
            for key, what, bar in METRICS]


def recorded_facts(meta: dict, live: dict) -> list[Fact]:
    """The recomputed numbers equal the recorded ones (a metric not recorded is not compared)."""
    same = all(meta.get(k) is None or abs(meta[k] - live[k]) < 1e-9 for k, *_ in METRICS)
    return [Fact(same, "The recomputed numbers equal the ones recorded when the model was saved." if same else
                 "The recomputed numbers differ from the recorded ones: the weights or the data changed since the "
                 "model was saved.")]


def live_counts_text(live: dict) -> str:
    return (f"On {live['n_agreement']} agreement sentences, {live['n_pronoun']} pronoun sentences and "
            f"{live['n_random_masked']} randomly masked words of the held-out corpus.")


def structural_rows(shapes: dict) -> list[dict[str, str]]:
    """The metadata's fill-ins on grammar sentences of skeletons the encoder trained on and of skeletons kept out."""
    keys = (("agreement_number_top1", "agreement: top-1 verb has the subject's number"),
            ("agreement_pair_accuracy", "agreement: is beats are (and each pair)"), ("pronoun_top1", "pronoun: top-1"))
    return [{"measure": what, **{f"{split} skeletons": pct(shapes[split][key]) for split in ("seen", "unseen")
                                 if split in shapes}} for key, what in keys]


# -- what the page says -------------------------------------------------------------------------------
WHY_MLM = (
    "An encoder has no causal mask: position *t* can read token *t + 1*. Trained to predict the next word, it would "
    "simply **copy** the next word from its input: the loss collapses towards zero and nothing is learned about "
    "language. Masked language modelling closes that shortcut. About 15 % of the words are chosen; of those, 80 % "
    "become `<mask>`, 10 % a random word and 10 % stay as they were, and the loss counts only the chosen positions. "
    "The word to predict is not in the input, so the model has to infer it from **both** sides.")
ABLATION_TEXT = ("That ablation trains the same model twice, with and without the causal mask, on next-token "
                 "prediction: the no-mask loss falls far below the causal one by reading the future, and its greedy "
                 "text falls apart once the future is not there to read.")
METRICS_TEXT = ("Measured on sentences the encoder never trained on: held-out agreement sentences (*the keys near the "
                "dog `<mask>` ready*), pronoun sentences (*the queen thanked the man because `<mask>` …*), and the "
                "held-out corpus with random words masked.")
STRUCTURAL_TEXT = ("On new sentences of the toy grammar, by their *skeleton* (word classes, DET ADJ NOUN VERB …): "
                   "shapes the encoder trained on, and shapes kept out of training altogether.")


def missing_encoder_text(have_other: bool) -> str:
    """The shipped encoder is not installed: say so, how to build it, and whether another encoder stands in."""
    return (f"The shipped encoder **{SHIPPED}** is not installed (assets/models/{SHIPPED}.safetensors is missing), so "
            f"the numbers on this page are not the trained encoder's. Build it with "
            f"`.venv/bin/python scripts/build_assets.py {SHIPPED}`."
            + (" Meanwhile the page runs an encoder of yours." if have_other else ""))


NO_METRICS_TEXT = ("This model's metadata records no held-out metrics (only the shipped encoder has them): press the "
                   "button to measure them.")
