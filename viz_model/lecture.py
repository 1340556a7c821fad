"""The lecture's examples in one place: sentences, prompts, the RoPE worked example, the mask demos' pairs."""

from __future__ import annotations

LECTURE_SENTENCES = (
    "The cat sat on the mat",
    "The trophy didn't fit in the suitcase because it was too big",
    "She gave him the book because he asked for it",
    "Send the report before the slides",
    "Send the slides before the report",
    "please send the report",
    "The bank by the river",
    "I like cats",
    "please send the report today",
)
# The sentence pickers: the lecture's sentences once each, plus its padded batch row.
EXAMPLES = (*dict.fromkeys(LECTURE_SENTENCES), "send report <PAD> <PAD>")
# Generate's prompts: lecture sentences cut before the word the model should predict.
PROMPTS = ("please send the", "The cat sat on the", "The trophy didn't fit in the suitcase because it",
           "She gave him the book because he", "Send the report before the", "The bank by the")
PERMUTATION = ("Send the report before the slides", "Send the slides before the report")
PAD_BATCH = ("please send the report", "send report <pad> <pad>")
# RoPE: the worked example (T=3, d_model=8, H=2, d_k=4) and the sentence of the model views.
ROPE_TEXT = "I like cats"
ROPE_Q = [[1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]] * 3  # (T=3, d_model=8): the same q at every position
ROPE_HEADS = 2
ROPE_SENTENCE = "the cat sat on the mat"
