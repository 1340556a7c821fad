"""What the RoPE page proves, one module per part of the lecture: the worked example, pair rotations and
relative scores, context extension, the length experiment, where RoPE acts, and the two conventions (torch)."""

from __future__ import annotations

from viz_model.lessons.rope.conventions import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    convention_check,
    convention_claim,
    convention_pairs,
    convention_scores,
    permutation_sentence,
    wrong_convention_sentence,
)
from viz_model.lessons.rope.extension import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    L_MAX,
    LP_MAX,
    PANEL_BASES,
    PANEL_D_KS,
    SCALING_PARAMS,
    angle_coverage,
    coverage_view,
    model_extension,
    ntk_note,
    own_claim,
    own_settings_sentence,
    panel_choices,
    panel_defaults,
    readouts,
    scaling_for,
    scaling_problems,
    scaling_table,
    seed_panel,
    short_target,
)
from viz_model.lessons.rope.length import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    COMPARED,
    LENGTH_MULTIPLES,
    MAX_EXPERIMENT_TOKENS,
    TOKEN_BUDGET,
    experiment_models,
    experiment_tokens,
    failed_cell,
    heldout_ids,
    heldout_windows,
    length_cell,
    length_experiment,
    length_intro,
    length_losses,
    length_notes,
    length_table,
    scaled_copy,
)
from viz_model.lessons.rope.rotation import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    angle_table,
    angle_view,
    head_distance_curves,
    live_settings,
    mean_self_scores,
    near_far,
    pair_scores,
    pair_shift,
    pair_view,
    random_distance_curves,
    random_qk,
    rope_score,
    rotate_at,
    scores_by_distance,
    wrap_sentence,
)
from viz_model.lessons.rope.where import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    head_on_off,
    own_rope_sentence,
    rope_on_off,
    where_claims,
    where_rows,
)
from viz_model.lessons.rope.worked import (  # noqa: F401 (re-exported: ui.rope, presets, handouts)
    MAX_EDIT_VALUE,
    WorkedExample,
    head_columns,
    omega_sentence,
    parse_matrix,
    q_frame,
    worked_arrows,
    worked_claim,
    worked_example,
    worked_tables,
)

# -- what the page says ---------------------------------------------------------------------------------
NO_ROPE_MODEL = ("No RoPE model is available (the sidebar model does not use RoPE and neither “classroom” nor "
                 "“enc-rope” is installed), so this part shows the math on random vectors only.")
WORKED_INTRO = ("**“I like cats”**: T = 3 tokens, d_model = 8, H = 2 heads, so d_k = 4 and each head has two "
                "pairs. Edit Q (one row per token) and every number below follows.")
NOT_OWN_SETTINGS = ("Put the panel back on the sidebar model's own settings (pick another model and back, or reload) "
                    "to check them against its frequencies.")
HEAD0_ROTATED = "Head 0 after RoPE. Head 1 uses the same angles on its own columns."
WORKED_ARROWS = "Head 0, pair 0 of each token: turned by t·ω₀ = t radians (dotted: before)"
SHIFT_BOTH = ("Move *shift both by*: both arrows turn by the same angle, so the angle between them — and "
              "the score — stay put.")
PACKED_WINDOWS = ("The windows pack several held-out sentences end to end, which is harder than the one-sentence "
                  "examples the models were trained on: compare the lines with each other, not with the training "
                  "loss.")
LOWER_IS_BETTER = "Lower is better. A line that climbs past 1× is a model reading positions it never saw in training."
NOT_FINE_TUNED = (
    "Why the scaled lines lose to plain RoPE here: these models were **not fine-tuned after scaling**. "
    "A scaling changes the angles the same weights see (linear interpolation shrinks every distance by "
    "the factor, so neighbouring tokens look closer than any pair did in training), and nothing here lets "
    "the model adapt to that. In practice a scaled model is fine-tuned briefly at the longer length "
    "(as for Code Llama, YaRN and Llama 3), and that short fine-tuning is what makes scaling pay off.")
CONVENTIONS_INTRO = ("Two layouts rotate the same pairs under different names. **Interleaved** (RoFormer, Meta "
                     "Llama, this app): pair i = (x₂ᵢ, x₂ᵢ₊₁). **Rotate-half** (HF Llama, GPT-NeoX): pair i = "
                     "(xᵢ, xᵢ₊d/2).")
