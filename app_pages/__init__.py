"""Marks app_pages as a package for import-linter only: Streamlit runs each page file as a script."""
