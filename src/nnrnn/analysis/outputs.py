"""Output folders of ``nnrnn analyze`` and ``nnrnn theory figure1|prop1|prop2``: they write only into a folder that
nnrnn made its own.  :func:`output_folder` creates ``--out`` if needed and writes the marker :data:`MARKER` there
first; an existing folder that holds anything (other than the marker and a run lock) but no marker is refused,
so a file nnrnn did not write (someone's ``summary.json``, a PNG) is never replaced."""
from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..training.runfolder import other_files
from ..training.runlock import make_folder

MARKER = ".nnrnn-analysis"     # written first into every folder analyze and theory write; see output_folder


def output_folder(folder, option: str = "--out") -> Path:
    """``folder`` ready for nnrnn's figures and summaries: created if missing (a UserError if it is a file, is
    inside one or cannot be written), and marked with :data:`MARKER`.  An existing folder without the marker
    that holds anything else is refused (UserError), so files nnrnn did not write are never replaced."""
    folder = make_folder(Path(folder), option)
    marker = folder / MARKER
    if marker.is_file():
        return folder
    try:
        foreign = other_files(folder, MARKER)
    except OSError as error:
        raise UserError(f"cannot read {folder} ({error.strerror}); choose another {option}") from None
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise UserError(f"{option} {folder} already holds files nnrnn did not write ({shown}); choose another "
                        f"{option} or an empty folder (to let nnrnn replace an earlier analysis of its own there, "
                        f"create the file {marker})")
    try:
        marker.write_text("This folder holds figures and summaries written by nnrnn (analyze, theory); nnrnn "
                          "replaces them when run again with this folder as --out.\n")
    except OSError as error:
        raise UserError(f"cannot write to {folder} ({error.strerror}); choose a writable {option}") from None
    return folder

