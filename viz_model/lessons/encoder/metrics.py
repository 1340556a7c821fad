"""The Held-out metrics tab: each measurement as recorded when the encoder was trained beside the same one
recomputed now, and the claims against the quality bars."""

from __future__ import annotations

from viz_model.lessons.common import Fact
from viz_model.lessons.encoder.fill_metrics import FILL_P, fill_in_metrics
from viz_model.lessons.encoder.toy_metrics import heldout_metrics
from viz_model.model import TinyTransformer

# (metadata key, what it measures, the quality bar)
METRICS = [
    ("agreement_number_top1", "Agreement across a distractor noun: the top-1 verb has the subject's number", "≥ 90 %"),
    ("agreement_pair_accuracy", "Agreement: p(right form) > p(its twin), e.g. are vs is", ""),
    ("pronoun_top1", "Pronoun fixed by its antecedent (gender, number, animacy): top-1 is right", "≥ 90 %"),
    ("random_mask_top1", "Random masked words (each word with p = 0.15): top-1 is the word", ""),
    ("random_mask_top5", "Random masked words: the word is among the top 5", ""),
]


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


# (encoder's key, unigram baseline's key, what it measures) on the English encoder's held-out WordNet text
FILL_METRICS = [
    ("fill_top1", "unigram_top1", "A hidden token of held-out WordNet text: the top-1 fill-in is that token"),
    ("fill_top5", "unigram_top5", "... the hidden token is among the top 5"),
]
FILL_TOL = 0.01  # recomputed vs recorded accuracy: float32 on another machine may flip a near tie, rarely more


def fill_metric_rows(meta: dict, live: dict | None) -> list[dict[str, str]]:
    """The English encoder's fill-in accuracy as recorded at the build, recomputed now (when `live`), and the unigram
    baseline's on the same blanks; then the cross-entropy at the blanks (recorded), the encoder's beside the
    unigram's."""
    rows = [{"measure": what, "encoder, recorded when trained": pct(meta.get(key)),
             "encoder, recomputed now": pct(live.get(key)) if live else "press the button",
             "unigram baseline": pct(meta.get(base))} for key, base, what in FILL_METRICS]
    if meta.get("fill_loss") is not None:
        rows.append({"measure": "Cross-entropy at the blanks (nats; lower is better)",
                     "encoder, recorded when trained": f"{meta['fill_loss']:.3f}",
                     "encoder, recomputed now": f"{live['fill_loss']:.3f}" if live else "press the button",
                     "unigram baseline": f"{meta.get('unigram_loss', float('nan')):.3f}"})
    return rows


def fill_facts(meta: dict, live: dict | None = None) -> list[Fact]:
    """The encoder beats the unigram baseline (top-1 at the blanks), and the recomputed accuracy is the recorded one
    within FILL_TOL."""
    enc, base = meta["fill_top1"], meta["unigram_top1"]
    top = meta.get("unigram_top_token", "?").strip()
    out = [Fact(enc > base, f"On {meta['n_masked']:,} hidden tokens of {meta['n_texts']} held-out WordNet texts the "
                            f"encoder's first guess is right {enc:.1%} of the time; guessing the most frequent token "
                            f"(“{top}”) everywhere is right {base:.1%} of the time ({enc / max(base, 1e-9):.1f}×).")]
    if live:
        diff = max(abs(meta[k] - live[k]) for k, *_ in FILL_METRICS)
        out.append(Fact(diff <= FILL_TOL, f"Recomputed on this server: within {diff:.4f} of the recorded accuracy "
                                          f"(allowed: {FILL_TOL})."))
    return out


def is_fill_in(meta: dict) -> bool:
    """The metadata records the English encoder's held-out fill-ins (not a toy encoder's agreement and pronouns)."""
    return "fill_top1" in meta


def records_nothing(meta: dict) -> bool:
    """The metadata records no held-out measurement (an encoder a student trained): the button measures them."""
    return not is_fill_in(meta) and all(meta.get(k) is None for k, *_ in METRICS)


def live_metrics(model: TinyTransformer, tokenizer, meta: dict) -> dict:
    """The held-out measurements of this encoder, now: fill_in_metrics or heldout_metrics."""
    return fill_in_metrics(model, tokenizer, meta) if is_fill_in(meta) else heldout_metrics(model, tokenizer)


def metric_table(meta: dict, live: dict | None) -> list[dict[str, str]]:
    return fill_metric_rows(meta, live) if is_fill_in(meta) else metric_rows(meta, live)


def metric_facts(meta: dict, live: dict | None) -> list[Fact]:
    """The English encoder: it beats the unigram, recomputed = recorded; a toy one: recomputed = recorded."""
    if is_fill_in(meta):
        return fill_facts(meta, live)
    return recorded_facts(meta, live) if live else []


def metrics_text(meta: dict) -> str:
    return FILL_TEXT if is_fill_in(meta) else METRICS_TEXT


def live_counts_text(live: dict) -> str:
    return (f"On {live['n_agreement']} agreement sentences, {live['n_pronoun']} pronoun sentences and "
            f"{live['n_random_masked']} randomly masked words of the held-out corpus.")


def structural_rows(shapes: dict) -> list[dict[str, str]]:
    """The metadata's fill-ins on grammar sentences of skeletons the encoder trained on and of skeletons kept out."""
    keys = (("agreement_number_top1", "agreement: top-1 verb has the subject's number"),
            ("agreement_pair_accuracy", "agreement: is beats are (and each pair)"), ("pronoun_top1", "pronoun: top-1"))
    return [{"measure": what, **{f"{split} skeletons": pct(shapes[split][key]) for split in ("seen", "unseen")
                                 if split in shapes}} for key, what in keys]


# -- what the page says ------------------------------------------------------------------------------------------------
METRICS_TEXT = ("Measured on sentences the encoder never trained on: held-out agreement sentences (*the keys near the "
                "dog `<mask>` ready*), pronoun sentences (*the queen thanked the man because `<mask>` …*), and the "
                "held-out corpus with random words masked.")

STRUCTURAL_TEXT = ("On new sentences of the toy grammar, by their *skeleton* (word classes, DET ADJ NOUN VERB …): "
                   "shapes the encoder trained on, and shapes kept out of training altogether.")

TOY_METRICS_TEXT = ("The agreement and pronoun measurements (*the keys near the dog `<mask>` ready*) are the toy "
                    "encoder's: they are built on the classroom corpus's words. Pick “Toy encoder” above to see them.")

FILL_TEXT = ("Measured on text the encoder never trained on: the WordNet test split (3 % of WordNet's synsets, "
             "by hash) shipped with the English model. In each text every token is hidden with probability "
             f"{FILL_P:.0%} (at least one per text, drawn with a fixed seed) and replaced by `<mask>`; the encoder "
             "reads the text once. The baseline guesses from token counts in the training text alone, ignoring the "
             "sentence.")

NO_METRICS_TEXT = ("This model's metadata records no held-out metrics (only the shipped encoder has them): press the "
                   "button to measure them.")
