"""A file's identity for caches that read files: a cache of what a file says is keyed by (path, mtime, size), so a
rewritten, replaced or removed file is read again (a key of the path alone keeps answering from the old file)."""

from __future__ import annotations

import os


def file_stamp(path: str | os.PathLike) -> tuple | None:
    """(path, st_mtime_ns, st_size) of one file; of a folder, (path, dir_stamp of its files); None when it cannot
    be read (missing, no permission)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if os.path.isdir(path):
        return str(path), dir_stamp(path, files_only=True)
    return str(path), st.st_mtime_ns, st.st_size


def dir_stamp(folder: str | os.PathLike, suffix: str = "", files_only: bool = False) -> tuple:
    """(name, st_mtime_ns, st_size) of each entry of `folder` whose name ends with `suffix`, sorted (() when the
    folder cannot be listed): a new, removed or rewritten file changes it. files_only: sub-folders left out."""
    try:
        with os.scandir(folder) as entries:
            found = [(e.name, e.stat()) for e in entries
                     if e.name.endswith(suffix) and not (files_only and e.is_dir())]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_mtime_ns, st.st_size) for name, st in found))
