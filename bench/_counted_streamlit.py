"""`streamlit run ...` with one addition for the load bench: every TinyTransformer built in this server process
appends a line to $CLASSROOM_LOAD_COUNTER, so the bench can check that model weights are loaded once per
process, not once per session. Same CLI, same arguments: python bench/_counted_streamlit.py run app.py ...
"""

import os
import sys
import traceback

from streamlit.web import cli

from viz_model import model as _model

_COUNTER = os.environ.get("CLASSROOM_LOAD_COUNTER")
_init = _model.TinyTransformer.__init__


def _counted_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    if _COUNTER:
        caller = next((f"{f.filename.rsplit('/', 1)[-1]}:{f.name}" for f in reversed(traceback.extract_stack()[:-1])
                       if "viz_model" in f.filename or "pages" in f.filename), "?")
        with open(_COUNTER, "a") as fh:
            fh.write(caller + "\n")


_model.TinyTransformer.__init__ = _counted_init

if __name__ == "__main__":
    sys.argv[0] = "streamlit"
    sys.exit(cli.main())
