"""python -m viz_model.handout LECTURE OUT.html: see viz_model.handout.build."""

import sys

from viz_model.handout.build import main

sys.exit(main())
