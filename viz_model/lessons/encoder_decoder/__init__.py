"""What the Encoder-decoder page proves: a cross-attention head learns the toy language's word alignment, and
reusing the encoder's K/V makes each decoding step cheaper than re-encoding the source.

One module per idea, in the page's order: source (the sentence, its reference and the steps decoded), membership
(was it in training?), three_kinds (the three attention kinds and their masks), alignment, reuse (encoder once,
K/V reused) and heldout (the held-out scores)."""

from __future__ import annotations

from viz_model.lessons.encoder_decoder.alignment import (
    NOT_GUIDED,
    TeacherForced,
    accuracy_panels,
    alignment_accuracy,
    alignment_by_class,
    alignment_hits,
    alignment_scores,
    alignment_sentence,
    best_head,
    crossings,
    guide_note,
    guide_weight,
    guided_of,
    guided_sentence,
    shown_head,
    teacher_forced,
    word_class,
)
from viz_model.lessons.encoder_decoder.heldout import (
    SHAPES_INTRO,
    STRUCTURAL_SPLITS,
    by_class_columns,
    exact_match,
    heldout_claims,
    heldout_metrics,
    metadata_metrics,
    structural_claims,
    structural_metrics,
    structural_rows,
    unguided_line,
)
from viz_model.lessons.encoder_decoder.membership import (
    _CORPUS,
    _HELDOUT,
    _REPLAYING,
    REPLAY_SPINNER,
    Membership,
    ShapeMembership,
    _key,
    _recipe,
    _replayed_draws,
    _trained_skeletons,
    _training_draws,
    shape_membership,
    training_membership,
    warm_membership,
)
from viz_model.lessons.encoder_decoder.reuse import (
    DecodeTiming,
    best_timing,
    decode_timing,
    decoding_tensors,
    reuse_sentence,
)
from viz_model.lessons.encoder_decoder.source import (
    EXAMPLES,
    MISSING_TRANSLATOR,
    NO_REFERENCE,
    TRANSLATOR,
    Source,
    decode_views,
    decoder_input,
    source_of,
    toy_language_text,
    toy_vocabulary,
    translation_claim,
)
from viz_model.lessons.encoder_decoder.three_kinds import (
    N_PAD,
    THREE_CAPTION,
    three_attentions,
    three_claims,
    three_panels,
    three_titles,
)

__all__ = [
    "EXAMPLES", "toy_vocabulary", "toy_language_text", "Source", "source_of", "decode_views", "decoder_input",
    "translation_claim", "TRANSLATOR", "MISSING_TRANSLATOR", "NO_REFERENCE", "_CORPUS", "_HELDOUT", "Membership",
    "_key", "_REPLAYING", "_training_draws", "_recipe", "warm_membership", "_replayed_draws", "training_membership",
    "ShapeMembership", "_trained_skeletons", "shape_membership", "REPLAY_SPINNER", "N_PAD", "three_attentions",
    "three_panels", "three_titles", "three_claims", "THREE_CAPTION", "alignment_hits", "alignment_accuracy",
    "guide_weight", "guided_of", "best_head", "TeacherForced", "teacher_forced", "alignment_scores", "word_class",
    "alignment_by_class", "crossings", "shown_head", "alignment_sentence", "guided_sentence", "accuracy_panels",
    "guide_note", "NOT_GUIDED", "DecodeTiming", "decode_timing", "best_timing", "decoding_tensors",
    "reuse_sentence", "exact_match", "heldout_metrics", "STRUCTURAL_SPLITS", "structural_metrics",
    "metadata_metrics", "heldout_claims", "unguided_line", "structural_rows", "by_class_columns",
    "structural_claims", "SHAPES_INTRO",
]
