"""Why masked LM: an encoder without the causal mask, trained to predict the next word, would copy it from its
input; hiding the words to predict closes that shortcut."""

from __future__ import annotations

# -- what the page says ------------------------------------------------------------------------------------------------
WHY_MLM = (
    "An encoder has no causal mask: position *t* can read token *t + 1*. Trained to predict the next word, it would "
    "simply **copy** the next word from its input: the loss collapses towards zero and nothing is learned about "
    "language. Masked language modelling closes that shortcut. About 15 % of the words are chosen; of those, 80 % "
    "become `<mask>`, 10 % a random word and 10 % stay as they were, and the loss counts only the chosen positions. "
    "The word to predict is not in the input, so the model has to infer it from **both** sides.")

ABLATION_TEXT = ("That ablation trains the same model twice, with and without the causal mask, on next-token "
                 "prediction: the no-mask loss falls far below the causal one by reading the future, and its greedy "
                 "text falls apart once the future is not there to read.")
