"""What the Encoder page proves: a masked-LM encoder fills in blanks from both sides.

One module per idea, in the page's order: models (which encoders, how each reads a sentence), fill_in (the
Fill-in tab), look_ahead ("The bank by the river"), why_mlm, toy_metrics and fill_metrics (the held-out
measurements of the toy and the English encoder) and metrics (the Held-out metrics tab)."""

from __future__ import annotations

from viz_model.lessons.encoder.fill_in import (
    STUDENT_SENTENCE,
    Blanks,
    blanks,
    both_sides_facts,
    default_masks,
    english_examples,
    example_sentences,
    fill_rows,
    masked_ids_run,
    masked_run,
    masked_text,
    reads_caption,
    row_sum_text,
)
from viz_model.lessons.encoder.fill_metrics import (
    FILL_P,
    FILL_SEED,
    Unigram,
    fill_in_accuracy,
    fill_in_items,
    fill_in_metrics,
    heldout_fill_texts,
    unigram_loss,
)
from viz_model.lessons.encoder.look_ahead import (
    BANK,
    KEY,
    QUERY,
    LookAhead,
    attention_weight,
    bank_ids,
    best_head,
    look_ahead_facts,
    query_row,
    reading_mismatch,
    shown_weight,
    weight_rows,
    y_top,
)
from viz_model.lessons.encoder.metrics import (
    FILL_METRICS,
    FILL_TEXT,
    FILL_TOL,
    METRICS,
    METRICS_TEXT,
    NO_METRICS_TEXT,
    STRUCTURAL_TEXT,
    TOY_METRICS_TEXT,
    fill_facts,
    fill_metric_rows,
    is_fill_in,
    live_counts_text,
    live_metrics,
    metric_facts,
    metric_rows,
    metric_table,
    metrics_text,
    pct,
    recorded_facts,
    records_nothing,
    structural_rows,
)
from viz_model.lessons.encoder.models import (
    DECODER,
    DECODERS,
    ENGLISH,
    MAX_TOP_K,
    PICKER_HELP,
    PLURAL_VERBS,
    SHIPPED,
    SINGULAR_VERBS,
    TWIN,
    MaskedWord,
    _id,
    bidirectional,
    decoder_for,
    encoder_name,
    is_byte_level,
    masked_probs,
    missing_encoder_text,
    sentence_ids,
)
from viz_model.lessons.encoder.toy_metrics import (
    _OWN_VERBS,
    AgreementResult,
    agreement_accuracy,
    agreement_items,
    heldout_metrics,
    pronoun_items,
    random_mask_accuracy,
    structural_items,
    structural_metrics,
    top1_accuracy,
)
from viz_model.lessons.encoder.why_mlm import ABLATION_TEXT, WHY_MLM

__all__ = [
    "SINGULAR_VERBS", "PLURAL_VERBS", "TWIN", "ENGLISH", "SHIPPED", "DECODER", "DECODERS", "MAX_TOP_K",
    "decoder_for", "is_byte_level", "encoder_name", "bidirectional", "MaskedWord", "masked_probs", "sentence_ids",
    "_id", "missing_encoder_text", "PICKER_HELP", "default_masks", "Blanks", "blanks", "reads_caption",
    "example_sentences", "english_examples", "masked_text", "masked_run", "masked_ids_run", "fill_rows",
    "both_sides_facts", "row_sum_text", "STUDENT_SENTENCE", "BANK", "QUERY", "KEY", "LookAhead", "attention_weight",
    "bank_ids", "reading_mismatch", "best_head", "query_row", "y_top", "shown_weight", "look_ahead_facts",
    "weight_rows", "WHY_MLM", "ABLATION_TEXT", "agreement_items", "pronoun_items", "AgreementResult",
    "agreement_accuracy", "top1_accuracy", "random_mask_accuracy", "heldout_metrics", "_OWN_VERBS",
    "structural_items", "structural_metrics", "FILL_P", "FILL_SEED", "Unigram", "fill_in_items", "fill_in_accuracy",
    "heldout_fill_texts", "fill_in_metrics", "unigram_loss", "METRICS", "pct", "metric_rows", "recorded_facts",
    "FILL_METRICS", "FILL_TOL", "fill_metric_rows", "fill_facts", "is_fill_in", "records_nothing", "live_metrics",
    "metric_table", "metric_facts", "metrics_text", "live_counts_text", "structural_rows", "METRICS_TEXT",
    "STRUCTURAL_TEXT", "TOY_METRICS_TEXT", "FILL_TEXT", "NO_METRICS_TEXT",
]
