"""Server-side cost of an Explorer rerun after a widget change, side by side with a bare page of the same charts.

For T = 16 and 64 tokens: AppTest of the real app on the Explorer page, then the time of `at.run()` after a widget
change, against bench/bare_page.py drawing the same number and size of Plotly charts with random data: switching
the head (to one already drawn, or a first view: trace cached, its figures built) and the knobs that re-run the model
(temperature, 1/sqrt(d_k) scaling, mask; a value not seen before, so nothing comes from a cache).

Compiled scripts: a Streamlit server compiles app.py and each page once (one ScriptCache per Runtime), but AppTest
makes a fresh ScriptCache on every run, so each measured rerun would also re-read, magic-transform and compile the
scripts (~5 ms for app.py + the Explorer page, ~1 ms for the bare page) — a cost no real rerun pays. By default both
pages here share one ScriptCache, as on a server; --recompile measures AppTest's per-run compile instead.
Run: .venv/bin/python bench/bench_pages.py [--repeats 7] [--recompile]

--models: Start and Explorer reruns at T = 32 tokens on the classroom model and on a folder shaped like GPT-2 small
(124M, random weights; bench/gpt2_small.py builds it once under runs/), side by side in one run: each round changes
a setting on one model, then the same setting on the next, so a burst of load spoils one round, not a column. Every
text, temperature and layer is new to its cache when it is measured (a model pass runs); a head is one already
traced (its figures are built). Results: printed and written to bench/results/bench_pages.md.
Run: .venv/bin/python bench/bench_pages.py --models [--repeats 9]

--generate: the Generate page beside Start's new sentence on the default model, side by side in one run (#43): each
round types a new sentence on Start, then on Generate a new prompt (greedy), greedy -> sampling, a new top-p and a new
seed, each a value not seen before (a new run of the model); ratio: this change / Start's new sentence in the same
round. Also Generate's first open in this process. Results: printed and written to
bench/results/bench_pages_generate.md.
Run: .venv/bin/python bench/bench_pages.py --generate [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the cat sat on the mat and she gave him the book because he asked for it".split()


def share_script_cache() -> None:
    """Compile each script once for the whole process, like a server (see the module docstring)."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test, local_script_runner

    shared = ScriptCache()
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: shared


def sentence(T: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(T))


def timed(at: AppTest, change) -> float:
    change(at)
    t0 = time.perf_counter()
    at.run()
    ms = (time.perf_counter() - t0) * 1000
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return ms


def open_explorer(T: int) -> tuple[AppTest, tuple[int, int]]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    at.text_input(key="explorer_text").set_value(sentence(T)).run()
    n_heads = len(at.selectbox(key="explorer_head").options)
    n_layers = len(at.selectbox(key="explorer_layer").options)
    assert json.loads(at.get_by_key("explorer_step_mat").proto.spec)["data"]  # the Pipeline tab is the open one
    return at, (n_layers, n_heads)


def open_bare(T: int, shape: tuple[int, int]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "bench" / "bare_page.py"), default_timeout=60)
    for k, v in zip(("bare_T", "bare_L", "bare_H"), (T, *shape)):
        at.session_state[k] = v
    at.run()
    return at


def measure(T: int, repeats: int) -> dict[str, tuple[float, float]]:
    """{what: (median ms, median ratio)}, "bare": (median ms, 1). Each Explorer run is followed by a bare run and its
    ratio is taken against that run: a burst of load from another process then spoils one pair, not a whole column
    (on a quiet machine this equals median / median). Each round sets a temperature not seen before, so each knob
    change below re-runs the model and rebuilds every figure, and a first view of a head builds its figures (the
    trace is cached): nothing comes from a cache by accident."""
    ex, shape = open_explorer(T)
    bare = open_bare(T, shape)
    H = shape[1]
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("warm", "cold", "knob", "scale", "mask")}

    def pair(what: str, change, n: int) -> None:
        ms = timed(ex, change)
        runs[what].append((ms, timed(bare, lambda a: a.selectbox(key="bare_head").set_value(n % H))))

    head = lambda h: lambda a: a.selectbox(key="explorer_head").set_value(h % H)  # noqa: E731
    for i in range(1, repeats + 1):
        temp = round(1.0 + 0.1 * i, 1)  # 1.1, 1.2, ...: a new trace every round
        pair("knob", lambda a, v=temp: a.slider(key="explorer_temp").set_value(v), i)
        pair("cold", head(i + 1), i + 1)  # first view of this head at this temperature
        pair("warm", head(i), i)          # back to the head drawn by the knob change: all cached
        pair("scale", lambda a: a.toggle(key="explorer_scale").set_value(False), i + 1)
        timed(ex, lambda a: a.toggle(key="explorer_scale").set_value(True))
        pair("mask", lambda a: a.radio(key="explorer_mask").set_value("bidirectional"), i)
        timed(ex, lambda a: a.radio(key="explorer_mask").set_value("causal"))
    med = statistics.median
    out = {k: (med(e for e, _ in v), med(e / b for e, b in v)) for k, v in runs.items()}
    out["bare"] = (med(b for v in runs.values() for _, b in v), 1.0)
    return out


# -- the classroom model against GPT-2 small, T = 32 -------------------------------------------------------------
MODELS_T = 32
START_STEPS = [("text", "type a new sentence"), ("layer", "another layer"), ("head", "another head")]
EXPLORER_STEPS = [("text", "type a new sentence"), ("temp", "temperature"), ("layer", "another layer"),
                  ("head", "another head")]


def model_sentences(path: Path, n: int, T: int = MODELS_T) -> list[str]:
    """n different sentences of T tokens for this model (its own tokenizer; a shipped model's <bos> counted)."""
    from viz_model import checkpoint

    ckpt = checkpoint.load_checkpoint(path)
    extra = int(bool(ckpt.metadata.get("bos")) and ckpt.metadata.get("source") != "huggingface")
    out = []
    for off in range(n):
        words = [WORDS[(off + i) % len(WORDS)] for i in range(T)]
        while len(ckpt.tokenizer.encode(" ".join(words)).ids) + extra > T:
            words.pop()
        out.append(" ".join(words))
    return out


def open_model(key: str, page: str, first: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.selectbox(key="model_key").set_value(key).run()
    if page != "start":
        at.switch_page(f"app_pages/{page}.py").run()
    at.text_input(key=f"{page}_text").set_value(first).run()
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return at


def measure_models(models: dict[str, Path], repeats: int) -> dict:
    """{(page, step): {model key: [ms, ...]}}, rounds interleaved across the models (key -> its file or folder)."""
    keys = list(models)
    sents = {k: model_sentences(p, repeats + 1) for k, p in models.items()}
    apps = {(k, pg): open_model(k, pg, sents[k][0]) for k in keys for pg in ("start", "explorer")}
    shape = {k: (len(apps[k, "start"].selectbox(key="start_layer").options),
                 len(apps[k, "start"].selectbox(key="start_head").options)) for k in keys}
    runs: dict = {}
    for i in range(1, repeats + 1):
        for pg, steps in (("start", START_STEPS), ("explorer", EXPLORER_STEPS)):
            for step, _ in steps:
                for k in keys:
                    change = model_change(pg, step, i, sents[k][i], *shape[k])
                    runs.setdefault((pg, step), {}).setdefault(k, []).append(timed(apps[k, pg], change))
    return {"runs": runs, "shape": shape, "T": MODELS_T}


def model_change(pg: str, step: str, i: int, sentence: str, L: int, H: int):
    """Round i's change of one setting on page pg (a value its caches have not seen, but for the head)."""
    if step == "text":
        return lambda a: a.text_input(key=f"{pg}_text").set_value(sentence)
    if step == "temp":
        return lambda a: a.slider(key="explorer_temp").set_value(round(1.0 + 0.1 * i, 1))
    if step == "layer":
        return lambda a: a.selectbox(key=f"{pg}_layer").set_value(i % L)
    return lambda a: a.selectbox(key=f"{pg}_head").set_value(i % H)


def models_table(res: dict, keys: list[str]) -> str:
    med = statistics.median
    base, cols = keys[0], keys[1:]
    head = "| page | change | " + " | ".join(f"{k} ms" for k in keys) + " | " + " | ".join(
        f"{k} / {base}" for k in cols) + " |"
    lines = [head, "|" + "---|" * (2 + len(keys) + len(cols))]
    for (pg, step), by in res["runs"].items():
        label = dict(START_STEPS + EXPLORER_STEPS)[step]
        ratios = [med(a / b for a, b in zip(by[k], by[base])) for k in cols]
        lines.append(f"| {pg} | {label} | " + " | ".join(f"{med(by[k]):.0f}" for k in keys) + " | "
                     + " | ".join(f"{r:.1f}x" for r in ratios) + " |")
    return "\n".join(lines)


def main_models(args) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import gpt2_small

    from viz_model.hf import ENV_VAR

    folder = gpt2_small.ensure()
    os.environ[ENV_VAR] = str(folder)
    # app.py runs torch on one thread per script run: the same here, so that the sidebar's device label (which
    # names the thread count) reads the same in this thread, where AppTest formats widget values, as in the script
    import torch

    torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))
    models = {"classroom": ROOT / "assets" / "models" / "classroom.safetensors", gpt2_small.NAME: folder}
    keys = list(models)
    t0 = time.perf_counter()
    res = measure_models(models, args.repeats)
    shape = ", ".join(f"{k}: {L} layers x {H} heads" for k, (L, H) in res["shape"].items())
    text = (f"# Start and Explorer reruns at T = {res['T']}, classroom model vs GPT-2 small\n\n"
            f"Server time of one `at.run()` after the change (AppTest of the real app, scripts compiled once as on a "
            f"server), median of {args.repeats} rounds; ratio: median of the per-round ratios (both models measured "
            f"in the same round). {os.cpu_count()} CPUs, one torch thread per script run (app.py's default). "
            f"Models: {shape}. A new sentence, temperature or layer runs the model (nothing cached); another head "
            f"of a traced layer builds its figures only.\n\n" + models_table(res, keys)
            + f"\n\nWhole run: {time.perf_counter() - t0:.0f} s. Run: `.venv/bin/python bench/bench_pages.py "
              f"--models --repeats {args.repeats}`\n")
    print(text)
    out = ROOT / "bench" / "results" / "bench_pages.md"
    out.write_text(text)
    print(f"wrote {out}")


# -- Generate beside Start (#43) ----------------------------------------------------------------------------------
GENERATE_STEPS = [("start", "Start: new sentence"), ("prompt", "Generate: new prompt (greedy)"),
                  ("sampling", "Generate: greedy -> sampling"), ("top_p", "Generate: new top-p"),
                  ("seed", "Generate: new seed (sampling)")]


def words(n: int, off: int) -> str:
    return " ".join(WORDS[(off + i) % len(WORDS)] for i in range(n))


def open_page(page: str | None) -> tuple[AppTest, float]:
    """A new session on the default model, opened on Start (page None) or then on `page`, whose first open is timed
    (ms; 0 for Start)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    t0 = time.perf_counter()
    if page is not None:
        at.switch_page(f"app_pages/{page}.py").run()
    ms = (time.perf_counter() - t0) * 1000
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return at, ms


def measure_generate(repeats: int) -> dict:
    """{step: [ms, ...]} over `repeats` rounds, and the first opens (ms). Every prompt, sentence, top-p and seed is new
    to the caches when it is timed; the untimed changes between them set up the next one."""
    start, _ = open_page(None)
    gen, open_gen = open_page("generate")
    timed(gen, lambda a: a.radio(key="generate_kind").set_value("sampling"))
    timed(gen, lambda a: a.checkbox(key="generate_use_p").set_value(True))  # top-p on for the sampling rounds
    timed(gen, lambda a: a.radio(key="generate_kind").set_value("greedy"))
    runs: dict[str, list[float]] = {k: [] for k, _ in GENERATE_STEPS}
    for i in range(1, repeats + 1):
        for step, page, change in generate_round(i):
            ms = timed(start if page == "start" else gen, change)
            if step is not None:
                runs[step].append(ms)
    return {"runs": runs, "open": open_gen}


def generate_round(i: int) -> list:
    """Round i: (step timed, or None for a set-up change; "start" or "generate"; the change)."""
    box = lambda key, v: lambda a: a.text_input(key=key).set_value(v)  # noqa: E731
    seed = lambda v: lambda a: a.number_input(key="generate_seed").set_value(v)  # noqa: E731
    kind = lambda v: lambda a: a.radio(key="generate_kind").set_value(v)  # noqa: E731
    return [("start", "start", box("start_text", words(8, 3 * i))),
            ("prompt", "generate", box("generate_text", words(5, 3 * i + 1))),
            (None, "generate", seed(1000 + 3 * i)),  # greedy: the seed is not used yet
            ("sampling", "generate", kind("sampling")),
            ("top_p", "generate", lambda a: a.slider(key="generate_p").set_value(round(0.5 + 0.05 * i, 2))),
            ("seed", "generate", seed(1001 + 3 * i)),
            (None, "generate", kind("greedy"))]


def generate_table(res: dict) -> str:
    med = statistics.median
    base = res["runs"]["start"]
    lines = ["| change | median ms | min ms | max ms | / Start's new sentence (median of per-round ratios) |",
             "|---|---|---|---|---|"]
    for step, label in GENERATE_STEPS:
        ms = res["runs"][step]
        ratio = med(a / b for a, b in zip(ms, base))
        lines.append(f"| {label} | {med(ms):.0f} | {min(ms):.0f} | {max(ms):.0f} | {ratio:.2f}x |")
    return "\n".join(lines) + (f"\n\nGenerate's first open in this process (a new session, after Start loaded the "
                                f"model): {res['open']:.0f} ms.")


def main_generate(args) -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))  # app.py's default, as above
    t0 = time.perf_counter()
    res = measure_generate(args.repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = (f"# Generate beside Start: server time of one rerun after a change\n\n"
            f"AppTest of the real app on the default model, scripts compiled once as on a server; median of "
            f"{args.repeats} rounds, each round timing Start's new sentence and then each Generate change (a value "
            f"not seen before: the model runs). {os.cpu_count()} CPUs, one torch thread per script run; load "
            f"average {load:.1f} at the end (the machine is shared).\n\n" + generate_table(res)
            + f"\n\nWhole run: {time.perf_counter() - t0:.0f} s. Run: `.venv/bin/python bench/bench_pages.py "
              f"--generate --repeats {args.repeats}`\n")
    print(text)
    out = ROOT / "bench" / "results" / "bench_pages_generate.md"
    out.write_text(text)
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--recompile", action="store_true",
                        help="AppTest's default: every run recompiles app.py and the page (a server compiles once)")
    parser.add_argument("--models", action="store_true",
                        help="Start and Explorer at T = 32: the classroom model against GPT-2 small")
    parser.add_argument("--generate", action="store_true",
                        help="Generate (new prompt, sampling, top-p, seed) beside Start's new sentence")
    args = parser.parse_args()
    if not args.recompile:
        share_script_cache()
    if args.models:
        main_models(args)
        return
    if args.generate:
        main_generate(args)
        return
    rows = [(T, measure(T, args.repeats)) for T in (16, 64)]
    print("\nExplorer rerun after a widget change: median ms, server side (AppTest); ratio: median of (this run / the")
    print("bare-page run right after it)")
    print("  head (warm): switch to a head already drawn, trace and figures cached")
    print("  head (first view): its figures are built (trace cached)")
    print("  temperature / scale / mask: a knob value not seen before: model re-run + every figure rebuilt")
    print("  scripts compiled " + ("on every run (AppTest default)" if args.recompile else "once, as on a server"))
    cols = [("head (warm)", "warm"), ("head (first view)", "cold"), ("temperature", "knob"), ("scale off", "scale"),
            ("mask", "mask")]
    print(f"{'T':>4} | {'bare page':>9} | " + " | ".join(f"{name:>{len(name)}} | {'ratio':>6}" for name, _ in cols))
    for T, r in rows:
        print(f"{T:>4} | {r['bare'][0]:>9.1f} | "
              + " | ".join(f"{r[k][0]:>{len(name)}.1f} | {r[k][1]:>5.2f}x" for name, k in cols))

if __name__ == "__main__":
    main()
