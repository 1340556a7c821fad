"""The lecture handout (#39, item 8): one static HTML file with every step's narrative and its charts, computed at
export time. A layer of its own between ui and figures/lessons: it composes the pages' lessons (which compute) with
their figures (which draw), with no Streamlit, so the command line builds the same file as the app's button."""
