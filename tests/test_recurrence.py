"""RNN vs transformer: BPTT multiplies step Jacobians (geometric decay / growth with ‖W_hh‖₂), a transformer's
gradient does not decay with distance, and RecurrentLM trains, saves and loads like the transformer."""

import json
import math
import random

import pytest
import torch
from torch import nn

from viz_model import ASSETS_DIR, checkpoint, gradients
from viz_model.config import ModelConfig
from viz_model.data import RECALL_KEYS, TaskData, recall_example
from viz_model.lessons import recurrence
from viz_model.model import TinyTransformer
from viz_model.rnn import RecurrentConfig, RecurrentLM
from viz_model.train import TrainConfig, Trainer, accuracy_by_distance


# -- gradients by distance -----------------------------------------------------------------------------
@pytest.mark.parametrize("gain", [0.8, 1.25])
def test_rnn_gradient_by_distance_is_geometric_with_rate_the_spectral_norm_of_w_hh(gain):
    """In tanh's linear range (inputs of size 1e-6, orthogonal W_hh x gain) the gradient is exactly gain^d."""
    model = recurrence.linear_regime_rnn(gain)
    assert gradients.spectral_norm(model) == pytest.approx(gain, rel=1e-5)
    ids = torch.randint(1, 32, (1, 40))
    norms = gradients.by_distance(gradients.gradient_by_distance(model, ids))  # entry d = distance d
    slope = gradients.log_slope(norms, 0)
    assert slope == pytest.approx(math.log(gain), abs=1e-3)  # decays below 1 (slope < 0), grows above 1
    assert (slope < 0) == (gain < 1)


@pytest.mark.parametrize("target", [0.5, 0.9, 1.5, 3.0])
def test_jacobian_product_is_bounded_by_the_spectral_norm_to_the_power_distance(target):
    """‖∂h_T/∂h_{T−d}‖ = ‖J_T ⋯ J_{T−d+1}‖ ≤ ∏‖J_t‖ ≤ ‖W_hh‖₂^d, since |tanh'| ≤ 1 (normal-size inputs)."""
    torch.manual_seed(1)
    model = gradients.rescale_recurrence(RecurrentLM("rnn", 30, 32, 1), target)
    chain = gradients.jacobian_chain(model, torch.randint(1, 30, (1, 30)))
    d = torch.arange(30, dtype=torch.float32)
    assert chain.product_norms.shape == (30,) and chain.step_norms.shape == (29,)
    assert (chain.product_norms <= chain.bound * (1 + 1e-4)).all()
    assert (chain.bound <= target ** d * (1 + 1e-4)).all()
    assert (chain.step_norms <= target * (1 + 1e-5)).all()


def test_step_jacobians_match_autograd_through_torchs_own_cells():
    for kind in ("rnn", "lstm"):
        model = RecurrentLM(kind, 20, 8, 2)
        ids = torch.randint(0, 20, (1, 6))
        J = gradients.step_jacobians(model, ids, layer=1)  # (T-1, S, S)
        xs, states = gradients._layer_run(model, ids, 1)
        cell, x3 = model.layers[1], xs[3:4]
        ref = torch.autograd.functional.jacobian(lambda s, c=cell, x=x3: gradients._step(c, x, s[None])[0], states[2])
        assert J.shape == (5, 16 if kind == "lstm" else 8, 16 if kind == "lstm" else 8)
        assert torch.allclose(J[2], ref, atol=1e-6)
        assert torch.allclose(states[:, :8], model(ids, trace=True).trace.residual[1][0], atol=1e-6)


def test_rescaling_w_hh_works_on_a_copy():
    model = RecurrentLM("rnn", 20, 8, 1)
    before = model.weight_hh().clone()
    scaled = gradients.rescale_recurrence(model, 0.7)
    assert gradients.spectral_norm(scaled) == pytest.approx(0.7, rel=1e-5)
    assert torch.equal(model.weight_hh(), before)
    with pytest.raises(ValueError, match="positive"):
        gradients.rescale_recurrence(model, 0.0)
    with pytest.raises(ValueError, match="recurrent"):
        gradients.spectral_norm(TinyTransformer(ModelConfig.preset("tiny", vocab_size=20)))


def test_transformer_gradient_does_not_decay_with_distance():
    """At initialisation every earlier position is one attention step away: over distances 1..58 the gradient
    norms stay within a factor 3 of each other (measured 1.5-1.9 for seeds 0-2) and the fitted slope is below
    0.01 per step (|slope| x 58 < 0.6: no geometric decay); distance 0 has the residual path and is larger."""
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=30, max_len=64))
    norms = gradients.by_distance(gradients.gradient_by_distance(model, torch.randint(1, 30, (1, 60))))
    far = norms[1:59]
    assert float(far.max() / far.min()) < 3.0
    assert abs(gradients.log_slope(norms, 1, 59)) < 0.01
    assert norms[0] > far.max()


@pytest.mark.parametrize("kind", ["rnn", "lstm", "transformer"])
def test_gradient_by_distance_is_the_norm_of_dloss_dembedding_at_each_position(kind):
    """Shape (T,), and semantics checked by finite differences: moving x_t by eps along its own gradient
    changes ℓ (the last position's cross-entropy against its argmax) by eps·‖∂ℓ/∂x_t‖ (float64 model)."""
    torch.manual_seed(0)
    model = (TinyTransformer(ModelConfig.preset("tiny", vocab_size=30)) if kind == "transformer"
             else RecurrentLM(kind, 30, 16, 1)).double()
    ids = torch.randint(1, 30, (12,))
    norms = gradients.gradient_by_distance(model, ids)
    assert norms.shape == (12,)
    with torch.no_grad():
        target = model(ids).logits[0, -1].argmax()

    def loss_with(t: int, delta: torch.Tensor) -> float:
        def shift(_m, _i, out):
            out = out.clone()
            out[0, t] += delta
            return out
        handle = model.tok_emb.register_forward_hook(shift)
        with torch.no_grad():
            logits = model(ids).logits[0, -1]
        handle.remove()
        return float(nn.functional.cross_entropy(logits[None], target[None]))

    dim, eps = model.tok_emb.embedding_dim, 1e-6
    for t in (2, 11):  # central differences along each embedding axis give the gradient at position t
        grad = torch.tensor([(loss_with(t, eps * e) - loss_with(t, -eps * e)) / (2 * eps)
                             for e in torch.eye(dim, dtype=torch.float64)])
        assert float(grad.norm()) == pytest.approx(float(norms[t]), rel=1e-4)


@pytest.mark.float_sensitive
@pytest.mark.parametrize("kind", ["rnn", "lstm", "transformer"])
def test_gradient_norms_of_a_confident_shipped_model_are_not_float32_rounding(kind):
    """The page's curves (#38): the shipped LSTM and transformer are so sure of the recall answer that 1 − p is about
    1e-9, below float32's resolution; with the loss in float32 the gradient was that rounding (the LSTM's 36 % low,
    the transformer's 3x, and 10 % apart between CPU kernels). Against a float64 copy of the model, on a second
    path (its own hook and loss): within 1e-3 everywhere."""
    import copy

    ck = recurrence.load_shipped()[kind]
    ids = recurrence.recall_inputs(ck.tokenizer, 40, n=recurrence.N_INPUTS)
    got = gradients.gradient_norms(ck.model, ids).double()  # (n, T)
    model = copy.deepcopy(ck.model).double().eval()
    leaves: list[torch.Tensor] = []

    def leaf(_m, _i, out):
        leaves.append(out.detach().requires_grad_(True))
        return leaves[-1]

    handle = model.tok_emb.register_forward_hook(leaf)
    logits = model(ids).logits[:, -1]  # (n, vocab), float64
    handle.remove()
    if kind != "rnn":  # the RNN has forgotten the key 40 steps back: it is not sure, and float32 was fine for it
        assert float(logits.detach().softmax(-1).max(-1).values.min()) > 1 - 1e-6  # 1 − p below float32's ulp of 1
    loss = nn.functional.cross_entropy(logits, logits.argmax(-1), reduction="sum")
    (grad,) = torch.autograd.grad(loss, leaves[0])
    torch.testing.assert_close(got, grad.norm(dim=-1), rtol=1e-3, atol=0)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "transformer"])
def test_gradient_norms_of_a_batch_equal_each_row_on_its_own(kind):
    """One forward/backward for n inputs (the page's curves) gives each row's own gradient_by_distance."""
    torch.manual_seed(1)
    model = (TinyTransformer(ModelConfig.preset("tiny", vocab_size=30)) if kind == "transformer"
             else RecurrentLM(kind, 30, 16, 1)).double()
    ids = torch.randint(1, 30, (5, 9))
    batch = gradients.gradient_norms(model, ids)  # (5, 9)
    assert batch.shape == (5, 9)
    for row, norms in zip(ids, batch):
        torch.testing.assert_close(norms, gradients.gradient_by_distance(model, row), rtol=1e-10, atol=0)
    assert len({round(float(r.sum()), 12) for r in batch}) == 5  # the rows really differ


def test_gradient_by_distance_leaves_the_model_as_it_was():
    model = RecurrentLM("lstm", 20, 8, 1).train()
    model.requires_grad_(False)
    gradients.gradient_by_distance(model, torch.randint(0, 20, (1, 5)))
    assert model.training and all(p.grad is None for p in model.parameters())
    assert not model.tok_emb._forward_hooks
    with pytest.raises(ValueError, match="one sequence"):
        gradients.gradient_by_distance(model, torch.zeros(2, 5, dtype=torch.long))


# -- the model kind ------------------------------------------------------------------------------------
def test_recurrent_config_refuses_unknown_kinds():
    with pytest.raises(ValueError, match="kind"):
        RecurrentConfig(kind="gru")
    with pytest.raises(ValueError, match="unknown config field"):
        RecurrentConfig.from_dict({"kind": "rnn", "n_heads": 4})


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_recurrent_checkpoint_round_trip_gives_identical_logits(tmp_path, tok, kind):
    model = RecurrentLM(kind, tok.get_vocab_size(), 12, 2).eval()
    path = checkpoint.save(model, tok, tmp_path / f"{kind}.safetensors", {"title": kind})
    doc = json.loads(path.with_suffix(".json").read_text())
    assert doc["kind"] == kind and doc["config"]["kind"] == kind
    ck = checkpoint.load_checkpoint(path)
    assert isinstance(ck.model, RecurrentLM) and ck.model.kind == kind and ck.metadata == {"title": kind}
    x = torch.randint(1, tok.get_vocab_size(), (2, 9))
    assert torch.equal(model(x).logits, ck.model(x).logits)


def test_a_checkpoint_without_a_kind_loads_as_a_transformer(tmp_path, tok):
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=tok.get_vocab_size())).eval()
    path = checkpoint.save(model, tok, tmp_path / "old.safetensors")
    js = path.with_suffix(".json")
    doc = json.loads(js.read_text())
    del doc["kind"]  # what every checkpoint written before model kinds looks like
    js.write_text(json.dumps(doc))
    assert isinstance(checkpoint.load_checkpoint(path).model, TinyTransformer)
    doc["kind"] = "gru"
    js.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="kind 'gru'"):
        checkpoint.load_checkpoint(path)


def test_trainer_trains_an_rnn_one_step_on_recall(tok):
    torch.manual_seed(0)
    model = RecurrentLM("rnn", tok.get_vocab_size(), 16, 1)
    before = model.weight_hh().clone()
    trainer = Trainer(model, tok, TrainConfig(task="recall", steps=1, batch_size=8, snapshot_every=0,
                                              sample_every=0, eval_every=0))
    events = trainer.step()
    assert trainer.step_count == 1 and math.isfinite(events[0].loss)
    assert not torch.equal(before, model.weight_hh())
    assert events[-1].reason == "finished"


# -- the long-dependency task --------------------------------------------------------------------------
def test_recall_asks_for_the_key_distance_positions_back_and_scores_only_it(tok):
    ex = recall_example(random.Random(0), 7)
    assert len(ex.words) == 9 and ex.words[0] == ex.words[-1] and ex.words[0] in RECALL_KEYS
    assert ex.words[-2] == ":" and not ex.eos
    data = TaskData("recall", tok, batch_size=16)
    batch = data.batch(0)
    scored = batch.targets != tok.token_to_id("<pad>")
    assert (scored.sum(1) == 1).all()  # one answer per sequence, no <eos>
    last = scored.float().argmax(1)
    keys = batch.targets[torch.arange(16), last]
    assert (keys == batch.ids[:, 1]).all()  # the answer is the token right after <bos>
    assert (batch.ids[torch.arange(16), last] == tok.token_to_id(":")).all()


class _Oracle(nn.Module):
    """Answers with the token at position 1 (the key): an upper bound for accuracy_by_distance."""

    def __init__(self, vocab: int, cheat: bool):
        super().__init__()
        self.vocab, self.cheat, self.w = vocab, cheat, nn.Parameter(torch.zeros(1))

    @property
    def device(self):
        return self.w.device

    def forward(self, ids):
        logits = torch.zeros(*ids.shape, self.vocab)
        logits[torch.arange(len(ids)), -1, ids[:, 1] if self.cheat else 5] = 1.0
        return type("Out", (), {"logits": logits})


def test_accuracy_by_distance_scores_the_last_prediction_against_the_key(tok):
    V = tok.get_vocab_size()
    assert accuracy_by_distance(_Oracle(V, True), tok, (1, 10, 60), n=64) == {1: 1.0, 10: 1.0, 60: 1.0}
    constant = accuracy_by_distance(_Oracle(V, False), tok, (10,), n=64)[10]
    assert constant < 0.2  # one fixed answer: about chance (1/16) or 0


# -- the lesson ----------------------------------------------------------------------------------------
def test_graph_depth_is_t_for_an_rnn_and_l_for_a_transformer():
    assert recurrence.graph_depth("rnn", 512, 1).depth == 512
    assert recurrence.graph_depth("lstm", 512, 3).depth == 514
    assert recurrence.graph_depth("transformer", 512, 2).depth == 2


def test_comparable_models_have_about_the_same_parameter_count():
    models = recurrence.comparable_models(vocab_size=100, d_model=32, n_layers=2, max_len=64)
    counts = [m.num_params() for m in models.values()]
    assert max(counts) / min(counts) < 1.1


def test_timing_table_has_every_model_and_length_with_ratio_to_the_shortest():
    models = recurrence.comparable_models(vocab_size=50, d_model=16, n_layers=1, max_len=64)
    seen = []
    rows = recurrence.time_forward_backward(models, (8, 32), batch_size=2, device="cpu", repeats=1,
                                            progress=seen.append)
    assert [(r.kind, r.T) for r in rows] == [(k, t) for k in ("rnn", "lstm", "transformer") for t in (8, 32)]
    assert all(r.ms > 0 for r in rows) and [r.ratio for r in rows[::2]] == [1.0, 1.0, 1.0]
    assert seen == [0.5, 1.0]


def test_timing_restores_each_models_own_mode():
    """#41 (item 2): the timing runs in train mode inside eval_mode(training=True), so a model handed in eval mode
    comes back in eval mode (the old code set .train() and left it so)."""
    models = recurrence.comparable_models(vocab_size=50, d_model=16, n_layers=1, max_len=64)
    for m in models.values():
        m.eval()
    recurrence.time_forward_backward(models, (8,), batch_size=2, device="cpu", repeats=1)
    assert not any(m.training for m in models.values())


def test_shipped_models_lstm_decays_slower_than_rnn(tok):
    ck = recurrence.load_shipped()
    ids = recurrence.recall_inputs(ck["rnn"].tokenizer, 40, n=8)
    rnn = recurrence.gradient_curve(ck["rnn"].model, ids)
    lstm = recurrence.gradient_curve(ck["lstm"].model, ids)
    transformer = recurrence.gradient_curve(ck["transformer"].model, ids)
    assert rnn.slope < lstm.slope
    assert abs(transformer.slope) < abs(rnn.slope)


def test_shrinking_w_hh_of_the_shipped_rnn_makes_its_gradient_dive():
    """The slider: below ‖W_hh‖₂ = 1 every step shrinks the gradient (slope below ln 0.5 per step at 0.5)."""
    ck = recurrence.load_shipped()["rnn"]
    ids = recurrence.recall_inputs(ck.tokenizer, 30, n=4)
    trained = recurrence.rescaled_view(ck.model, ids)
    half = recurrence.rescaled_view(ck.model, ids, 0.5)
    assert half.spectral_norm == pytest.approx(0.5, rel=1e-5) and trained.spectral_norm > 1
    assert half.curve.slope < math.log(0.5) < trained.curve.slope < 0
    assert (half.chain.product_norms <= half.chain.bound * (1 + 1e-4)).all()


def test_shipped_models_record_their_accuracy_by_distance():
    for kind, ck in recurrence.load_shipped().items():
        recorded = {int(d): a for d, a in ck.metadata["accuracy_by_distance"].items()}
        fresh = accuracy_by_distance(ck.model, ck.tokenizer, sorted(recorded))
        assert fresh == pytest.approx(recorded, abs=1e-6), kind
        assert ck.metadata["kind"] == kind
    assert (ASSETS_DIR / "models" / "recurrence").is_dir()


def test_gradient_by_distance_is_right_when_sessions_share_the_model():
    """The app's sessions share one model object: eight threads measuring it at once must each get the serial
    result (before the lock, another thread's forward hook replaced this thread's captured leaf: 'the differentiated
    Tensor ... not used in the graph', found by bench/class_load.py's saturation run)."""
    from concurrent.futures import ThreadPoolExecutor

    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=30, max_len=64))
    inputs = [torch.randint(1, 30, (1, 48)) for _ in range(8)]
    serial = [gradients.gradient_by_distance(model, x) for x in inputs]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(5):
            together = list(pool.map(lambda x: gradients.gradient_by_distance(model, x), inputs))
            assert all(torch.allclose(a, b) for a, b in zip(together, serial))


def test_gradient_by_distance_ignores_another_sessions_forward_on_the_shared_model():
    """Another view of the same shared model (the Jacobian chain, a plain forward) runs tok_emb without the lock. A
    forward from another thread, made while this thread's hook is registered and before its own forward, must not
    be taken for this thread's input (before: 'the differentiated Tensor ... not used in the graph', 1 error in the
    saturation run of bench/class_load.py)."""
    import threading

    class Interleaved(RecurrentLM):
        def forward(self, ids, *args, **kwargs):
            other = threading.Thread(target=lambda: self.tok_emb(ids))  # another session, inside the window
            other.start()
            other.join()
            return super().forward(ids, *args, **kwargs)

    torch.manual_seed(0)
    plain = RecurrentLM("rnn", 30, 16, 1)
    model = Interleaved("rnn", 30, 16, 1)
    model.load_state_dict(plain.state_dict())
    ids = torch.randint(1, 30, (3, 10))
    torch.testing.assert_close(gradients.gradient_norms(model, ids), gradients.gradient_norms(plain, ids))


def test_gradient_words_say_grows_or_shrinks_from_the_numbers_given():
    assert recurrence.trend(1.17) == "grows" and recurrence.trend(0.70) == "shrinks"
    assert recurrence.trend(1.001) == "stays level"
    grows = recurrence.gradient_words(1.175, 1.61, 4)  # the shipped RNN at distance 4
    assert grows.startswith("**grows ×1.175 per step**") and "×1.61 from d=1 to the key, 3 steps" in grows
    assert "shrink" not in grows
    shrinks = recurrence.gradient_words(0.700, 4.01e-6, 40)
    assert shrinks.startswith("**shrinks ×0.700 per step**") and "×4.01e-06 from d=1 to the key, 39 steps" in shrinks
    assert "grow" not in shrinks
    # a falling fitted line with a peak at the key (the transformer at 40): each word from its own number
    mixed = recurrence.gradient_words(0.970, 16.9, 40)
    assert mixed.startswith("**shrinks ×0.970 per step** on the fitted line, yet **grows** overall")
    assert "×16.9 from d=1 to the key" in mixed
    with pytest.raises(ValueError):
        recurrence.trend(0.0)


def test_key_ratio_is_the_norm_at_the_key_over_the_norm_at_distance_1():
    curve = recurrence.GradientCurve("rnn", torch.tensor([5.0, 2.0, 1.0, 0.5, 0.25]), math.log(0.5), 0.5)
    assert recurrence.key_ratio(curve, 3) == pytest.approx(0.25)


# -- what the page shows: claims, tables and sentences from lessons.recurrence (#27) -------------------------
def test_gradient_claim_holds_on_the_shipped_models_and_fails_when_the_lstm_keeps_less():
    cs = recurrence.distance_curves(recurrence.load_shipped(read_only=True), 20, n=4)
    [claim] = recurrence.gradient_claims(cs)
    assert claim.ok and f"×{cs['rnn'].factor_per_step:.3f} vs ×{cs['lstm'].factor_per_step:.3f}" in claim.claim
    [swapped] = recurrence.gradient_claims({"rnn": cs["lstm"], "lstm": cs["rnn"]})
    assert not swapped.ok
    rows = recurrence.gradient_rows(cs, 20)
    assert [r["model"] for r in rows] == ["RNN", "LSTM", "transformer"]
    assert rows[0]["key ÷ d=1"] == f"{recurrence.key_ratio(cs['rnn'], 20):.3g}"
    words = recurrence.gradient_words(cs["rnn"].factor_per_step, recurrence.key_ratio(cs["rnn"], 20), 20)
    assert f"the RNN's gradient {words}" in recurrence.gradient_text(cs, 20)


@pytest.mark.parametrize("gain", [0.8, 1.3])
def test_linear_claim_holds_for_its_own_gain_and_fails_for_another(gain):
    view = recurrence.linear_view(gain)
    [claim] = recurrence.linear_claims(view, gain)
    assert claim.ok and f"ln({gain:.2f}) = {math.log(gain):.4f}" in claim.claim
    [wrong] = recurrence.linear_claims(view, gain + 0.1)  # the same curve is not (gain + 0.1)^d
    assert not wrong.ok
    measured, reference = recurrence.linear_lines(view, gain)
    assert reference["y"][1] == pytest.approx(measured["y"][1])
    assert reference["y"][-1] == pytest.approx(measured["y"][-1], rel=1e-2)  # gain^d through distance 1
    word = "explodes" if gain > 1 else "dives"
    assert f"it {word} (×{gain ** 39:.2g} over 39 steps)" in recurrence.linear_text(view, gain)


def test_accuracy_claim_holds_when_evaluated_again_and_fails_on_a_changed_number():
    models = recurrence.load_shipped(read_only=True)
    saved = recurrence.saved_accuracy(models)
    live = {r.kind: r.accuracy for r in recurrence.accuracy_table(
        {k: c.model for k, c in models.items()}, models["rnn"].tokenizer, sorted(saved["rnn"]), 128)}
    [claim] = recurrence.accuracy_claims(live, saved, 128)
    assert claim.ok and claim.claim.endswith("is 0.000")
    changed = {k: dict(by_d) for k, by_d in live.items()}
    changed["rnn"][max(changed["rnn"])] += 0.25
    [off] = recurrence.accuracy_claims(changed, saved, 128)
    assert not off.ok and off.claim.endswith("is 0.250")
    holds, text = recurrence.lstm_text(saved)
    assert holds == (min(saved["lstm"].values()) >= 0.99) and "LSTM" in text
    rows = recurrence.accuracy_rows(saved, {k: c.model.num_params() for k, c in models.items()})
    assert [r["model"] for r in rows] == ["RNN", "LSTM", "transformer"] and rows[0]["d=4"] == f"{saved['rnn'][4]:.2f}"


def _timing_rows(ms: dict[str, list[float]], Ts=(16, 32, 64, 128), device="cpu"):
    return [recurrence.TimingRow(k, T, m, m / v[0], 100, device) for k, v in ms.items() for T, m in zip(Ts, v)]


def test_timing_slopes_fit_the_longer_half_and_the_words_follow_them():
    linear = {"rnn": [1, 2, 4, 8], "lstm": [2, 4, 8, 16], "transformer": [1, 2, 4, 8]}
    slopes, upper = recurrence.timing_slopes(_timing_rows(linear))
    assert upper == [32, 64, 128] and all(s == pytest.approx(1.0) for s in slopes.values())
    shows = recurrence.timing_shows(_timing_rows(linear), slopes)
    assert "all three grow **roughly linearly** in T" in shows and "the **LSTM** is the slowest" in shows
    quadratic = {**linear, "transformer": [1, 1, 4, 16]}
    slopes, _ = recurrence.timing_slopes(_timing_rows(quadratic))
    assert slopes["transformer"] == pytest.approx(2.0)
    assert "their slopes are RNN 1.00, LSTM 1.00, transformer 2.00" in recurrence.timing_shows(
        _timing_rows(quadratic), slopes)
    assert recurrence.timing_drops(_timing_rows(linear)) is None
    assert "RNN T = 32 → 64" in recurrence.timing_drops(_timing_rows({**linear, "rnn": [1, 2, 1, 2]}))
    one = _timing_rows({k: v[:1] for k, v in linear.items()}, Ts=(16,))
    assert recurrence.timing_shows(one, recurrence.timing_slopes(one)[0]) is None
    table = recurrence.timing_rows(_timing_rows(linear))
    assert table[-1] == {"T": "128", "RNN ms": "8", "RNN × T=16": "8", "LSTM ms": "16", "LSTM × T=16": "8",
                         "transformer ms": "8", "transformer × T=16": "8", "RNN steps": "128"}


def test_depth_and_work_sentences_carry_the_numbers_of_t():
    assert "**300** steps one after another for T = 300" in recurrence.depth_text(300)
    assert "n·d² = 1,228,800 and n²·d = 5,760,000" in recurrence.work_text(300)  # 300·64² and 300²·64
    assert "attention does **fewer**" in recurrence.work_text(32) and "**more**" in recurrence.work_text(65)
    rnn, transformer = recurrence.depth_lines(300)
    assert rnn["depth"][rnn["T"].index(300)] == 300 and set(transformer["depth"]) == {2}


def test_the_linear_regime_rnn_is_the_same_model_whatever_ran_before():
    """Its LM head came from the global random state, so the page's chart height changed with what ran before it
    on the server; now the whole model comes from its seed."""
    torch.manual_seed(1)
    a = recurrence.linear_regime_rnn(1.0)
    torch.manual_seed(2)
    b = recurrence.linear_regime_rnn(1.0)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    c = recurrence.linear_regime_rnn(1.0, seed=1)
    assert not torch.equal(a.head.weight, c.head.weight)
