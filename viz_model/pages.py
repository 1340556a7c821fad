"""The app's pages, one row per lesson page: app.py draws its navigation from PAGES, tests import it (importing
app.py would run the app), and a lesson's modules in each layer are named by its row.

Adding a lesson is its modules (app_pages/<name>.py and, where it has them, viz_model/{ui,figures,lessons}/<name>)
plus one row here. tests/test_layers.py checks that every module a row names is in its layer's independence
contract in pyproject.toml, and says which one to add.
"""

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The layers a lesson has a module in (app_pages/ holds its page; ui, figures and lessons what it draws and computes)
LESSON_LAYERS = ("app_pages", "viz_model.ui", "viz_model.figures", "viz_model.lessons")


@dataclass(frozen=True)
class Page:
    """One page of the app. `name`: its modules' name in every layer (app_pages/<name>.py is the page);
    `url`: its URL path; `params`: the prefixes of its share parameters (a link's settings, lectures.PAGE_PARAMS);
    `old_urls`: paths it was served at before, still opened by a hidden page; `parts`: other lessons drawn on this
    page (their modules are named like `name`'s: ALiBi's tab on the RoPE page, the English model's measured quality
    on Start, a real model's paged grid on the Explorer). A lesson's modules import no other lesson's (the import
    contract "lessons_apart", scripts/lesson_contract.py); what two lessons share lives in a layer's shared module."""

    section: str
    name: str
    title: str
    icon: str
    url: str
    params: tuple[str, ...]
    old_urls: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        """The page's script, relative to the repository root (what st.Page runs)."""
        return f"app_pages/{self.name}.py"

    def modules(self, root: Path = ROOT) -> list[str]:
        """The dotted names of this lesson's modules (its own and its parts') in every layer where one exists."""
        found = []
        for layer in LESSON_LAYERS:
            folder = root.joinpath(*layer.split("."))
            found += [f"{layer}.{n}" for n in (self.name, *self.parts)
                      if (folder / f"{n}.py").exists() or (folder / n / "__init__.py").exists()]
        return found


# The sidebar's order. The folder is not called "pages/": with that name Streamlit runs a page opened by URL as a
# v1 multipage app, skipping app.py. /start: the default page is served at "/" only (#26), a hidden page keeps
# old /start links; /rnn-vs-transformer: the lesson's URL before it took its one name (#27).
PAGES: tuple[Page, ...] = (
    Page("Start", "start", "Start", ":material/home:", "start", ("start_",), old_urls=("start",), parts=("english",)),
    Page("Attention", "explorer", "Explorer", ":material/grid_on:", "explorer", ("explorer_",), parts=("real_models",)),
    Page("Attention", "masks", "Masks", ":material/filter_alt:", "masks", ("masks_",)),
    Page("Attention", "qkv", "Q, K and V", ":material/key:", "qkv", ("qkv_",)),
    Page("Position", "sinusoidal", "Sinusoidal", ":material/waves:", "sinusoidal", ("sinusoidal_",)),
    Page("Position", "rope", "RoPE", ":material/rotate_right:", "rope", ("rope_",), parts=("alibi",)),
    Page("Architectures", "encoder", "Encoder", ":material/join_inner:", "encoder", ("encoder_",)),
    Page("Architectures", "encoder_decoder", "Encoder–decoder", ":material/translate:", "encoder-decoder", ("ed_",)),
    Page("Why it trains", "recurrence", "RNN vs Transformer", ":material/timeline:", "recurrence", ("recurrence_",),
         old_urls=("rnn-vs-transformer",)),
    Page("Why it trains", "normalization", "Normalization", ":material/equalizer:", "normalization", ("norm_",)),
    # #40: what attention is, and what it is not
    Page("Inside the model", "lens", "Logit lens", ":material/layers:", "logit-lens", ("lens_",)),
    Page("Inside the model", "attribution", "Attention vs attribution", ":material/compare_arrows:", "attribution",
         ("attribution_",)),
    Page("Inside the model", "sinks", "Attention sinks", ":material/anchor:", "sinks", ("sinks_",)),
    Page("Lab", "train", "Train", ":material/model_training:", "train", ("train_",)),
    Page("Lab", "generate", "Generate", ":material/edit_note:", "generate", ("generate_",)),
    Page("Lab", "cost", "Cost", ":material/speed:", "cost", ("cost_",)),
)


def page_files() -> list[str]:
    """The pages' scripts, in the sidebar's order (only pages whose file exists are listed, as app.py does)."""
    return [p.file for p in PAGES if (ROOT / p.file).exists()]


def page_urls() -> list[str]:
    """The pages' URL paths, in the sidebar's order (only pages whose file exists)."""
    return [p.url for p in PAGES if (ROOT / p.file).exists()]
