"""Held-out scores: exact match and the best head's alignment on sentences never trained on, and on sentence
shapes (skeletons) kept out of training, against the shipped translator's bars."""

from __future__ import annotations

from viz_model import data
from viz_model.lessons.common import Fact
from viz_model.lessons.encoder_decoder.alignment import alignment_by_class, alignment_scores, best_head
from viz_model.seq2seq import Seq2SeqTransformer, greedy_batch, guided_head


def exact_match(model: Seq2SeqTransformer, tokenizer, sentences: list[str]) -> float:
    """Share of sentences whose greedy translation equals the reference word for word."""
    eos = tokenizer.token_to_id("<eos>")
    sources = [[*(tokenizer.token_to_id(w) for w in data.source_words(s)), eos] for s in sentences]
    outputs = greedy_batch(model, sources, max_new_tokens=model.config.max_len, bos_id=tokenizer.token_to_id("<bos>"),
                           eos_id=eos)
    refs = [data.reference_translation(s)[0] for s in sentences]
    return sum(" ".join(tokenizer.id_to_token(i) for i in out) == ref for out, ref in zip(outputs, refs)) / len(refs)


def heldout_metrics(model: Seq2SeqTransformer, tokenizer, n: int = 400, guided: bool = False) -> dict:
    """The shipped translator's metadata: exact match and per-head alignment on sentences never trained on;
    `guided` (training pulled seq2seq.guided_head toward the alignment): also that head's score and the best
    head that was not guided."""
    sentences = data.heldout_sentences(n, seed=1, translatable=True)
    scores = alignment_scores(model, tokenizer, sentences)  # (L, H)
    layer, head = best_head(scores)
    by_class = alignment_by_class(model, tokenizer, sentences, layer, head)
    out = {"exact_match": exact_match(model, tokenizer, sentences), "n_sentences": len(sentences),
           "alignment_accuracy": [[round(float(a), 4) for a in row] for row in scores],
           "best_alignment_head": {"layer": layer, "head": head, "accuracy": float(scores[layer, head])},
           "best_head_by_class": {c: [round(a, 4), n] for c, (a, n) in by_class.items()}}
    if guided:
        g_layer, g_head = guided_head(model.config)
        u_layer, u_head = best_head(scores, exclude=(g_layer, g_head))
        out["guided_head"] = {"layer": g_layer, "head": g_head, "accuracy": float(scores[g_layer, g_head])}
        out["best_unguided_head"] = {"layer": u_layer, "head": u_head, "accuracy": float(scores[u_layer, u_head])}
    return out


STRUCTURAL_SPLITS = {"seen": "unseen sentences of skeletons the model trained on",
                     "unseen": "sentences of skeletons (whole shapes) kept out of training"}


def structural_metrics(model: Seq2SeqTransformer, tokenizer, n: int = 200, guided: bool = False) -> dict:
    """Exact match and the best head's alignment (plain and copy-aware) per structural split (STRUCTURAL_SPLITS):
    does the translator know the grammar, or only the shapes it saw? `guided`: the best head is the best one that
    was not guided (seq2seq.guided_head), and the guided head's scores are added."""
    exclude = guided_head(model.config) if guided else None
    out = {}
    for split in STRUCTURAL_SPLITS:
        sentences = data.structural_sentences(n, split)
        plain = alignment_scores(model, tokenizer, sentences)
        copy = alignment_scores(model, tokenizer, sentences, copy_aware=True)  # (L, H)
        layer, head = best_head(copy, exclude=exclude)
        by_class = alignment_by_class(model, tokenizer, sentences, layer, head, copy_aware=True)
        out[split] = {"n_sentences": len(sentences), "exact_match": exact_match(model, tokenizer, sentences),
                      "best_head": {"layer": layer, "head": head, "alignment": round(float(plain[layer, head]), 4),
                                    "copy_aware_alignment": round(float(copy[layer, head]), 4)},
                      "copy_aware_alignment": [[round(float(a), 4) for a in row] for row in copy],
                      "best_head_by_class": {c: [round(a, 4), k] for c, (a, k) in by_class.items()}}
        if exclude is not None:
            out[split]["guided_head"] = {"layer": exclude[0], "head": exclude[1],
                                         "copy_aware_alignment": round(float(copy[exclude]), 4)}
    return out


def metadata_metrics(meta: dict, guided: tuple[int, int] | None) -> list[tuple[str, object, str | None] | None]:
    """The four metrics (label, value, help) of the metadata's held-out scores; None where the model has none."""
    best, unguided = meta.get("best_alignment_head", {}), meta.get("best_unguided_head")
    taught = " (the guided head)" if guided == (best.get("layer"), best.get("head")) else ""
    return [("Exact match (metadata)", f"{meta['exact_match']:.1%}", "greedy translation = reference"),
            ("Best head's alignment (metadata)", f"{best.get('accuracy', float('nan')):.1%}",
             f"layer {best.get('layer')}, head {best.get('head')}{taught}"),
            ("Best head not guided (metadata)", f"{unguided['accuracy']:.1%}",
             f"layer {unguided['layer']}, head {unguided['head']}: it found its own way") if unguided else None,
            ("Held-out sentences", int(meta.get("n_sentences", 400)), None)]


def heldout_claims(live: dict, guided: tuple[int, int] | None) -> list[Fact]:
    """heldout_metrics measured now against the shipped translator's bars: exact match ≥ 95 %, best head ≥ 80 %."""
    em, best = live["exact_match"], live["best_alignment_head"]
    taught = " (guided in training)" if guided == (best["layer"], best["head"]) else ""
    return [Fact(em >= 0.95, f"Exact match {em:.1%} (goal: at least 95 %)"),
            Fact(best["accuracy"] >= 0.80, f"Layer {best['layer']}, head {best['head']}{taught} aligns "
                 f"{best['accuracy']:.1%} of target words (goal: at least 80 %)")]


def unguided_line(acc, guided: tuple[int, int]) -> str:
    u_layer, u_head = best_head(acc, exclude=guided)
    return f"The best head that was not guided: layer {u_layer}, head {u_head}, **{acc[u_layer, u_head]:.1%}**."


def structural_rows(structural: dict) -> list[dict]:
    """One row per structural split of the metadata: sentences, exact match, the best head's alignment."""
    rows = []
    for split, what in STRUCTURAL_SPLITS.items():
        m = structural.get(split)
        if m:
            b = m["best_head"]
            rows.append({"sentences": what, "n": m["n_sentences"], "exact match": f"{m['exact_match']:.1%}",
                         "head": f"L{b['layer']}·H{b['head']}", "alignment": f"{b['alignment']:.1%}",
                         "copy-aware alignment": f"{b['copy_aware_alignment']:.1%}"})
    return rows


def by_class_columns(structural: dict) -> dict[str, dict[str, str]]:
    """{'<split> skeletons': {word class: the best head's copy-aware alignment}}, one column per structural split."""
    by_class = {split: structural[split]["best_head_by_class"] for split in STRUCTURAL_SPLITS if split in structural}
    return {f"{split} skeletons": {c: f"{a:.0%} of {k}" for c, (a, k) in classes.items()}
            for split, classes in by_class.items()}


def structural_claims(structural: dict, guided: tuple[int, int] | None) -> list[Fact]:
    """The unseen skeletons against the bars: exact match ≥ 95 %, the best (unguided) head's copy-aware alignment
    ≥ 80 %; none when the metadata has no unseen split."""
    unseen = structural.get("unseen", {})
    if not unseen:
        return []
    em, al = unseen["exact_match"], unseen["best_head"]["copy_aware_alignment"]
    who = "best head not guided" if guided is not None else "best head"
    return [Fact(em >= 0.95, f"Exact match on unseen skeletons {em:.1%} (goal: at least 95 %)"),
            Fact(al >= 0.80, f"The {who}'s copy-aware alignment on unseen skeletons {al:.1%} (goal: at least 80 %)")]


# -- what the page says ------------------------------------------------------------------------------------------------
SHAPES_INTRO = ("**Seen and unseen sentence shapes.** A sentence's *skeleton* is its word classes (DET ADJ NOUN VERB "
                "…). Some skeletons were kept out of training altogether; a translator that learnt the grammar "
                "translates them as well as new sentences of shapes it saw.")
