"""``nnrnn data fetch {mnist,ptb} [--data-dir DIR] [--mirror URL ...]``: download the data sets."""
from __future__ import annotations

import sys

from ..data.fetch import DATASETS, DEADLINE, TIMEOUT, check_seconds, fetch
from ..data.paths import default_dir
from ..errors import OptionError


def add_arguments(data) -> None:
    """The ``data`` command's one subcommand, ``fetch``."""
    data.description = "Download the official data files; see docs/data.md."
    commands = data.add_subparsers(dest="data_command", metavar="COMMAND", parser_class=type(data))
    commands.required = True
    names = sorted(n for n in DATASETS if not n.startswith("_"))
    f = commands.add_parser(
        "fetch", help="download and verify a data set's official files",
        description="Download a data set's official files from a list of mirrors, verify each "
                    "(md5, or format for ptb.char.train.txt) and put it where the tasks look for it.")
    f.add_argument("name", choices=names, help="data set")
    # --data-dir, as every command that reads the data names the folder; --dest, its first name, still works
    f.add_argument("--data-dir", "--dest", dest="dest", metavar="DIR", default=None,
                   help="folder to put the files in, the one to give `nnrnn train --data-dir` (default: "
                        "$NNRNN_DATA/NAME, else ${XDG_CACHE_HOME:-~/.cache}/nnrnn/NAME; --dest is its older name)")
    f.add_argument("--mirror", metavar="URL", nargs="+", action="extend", default=None,
                   help="mirror(s) to try, in order, instead of the defaults: a base URL the file names are "
                        "appended to, or the URL of a .tgz/.tar.gz/.tar archive holding the files "
                        "(file:// URLs work)")
    f.add_argument("--timeout", metavar="SECONDS", type=float, default=TIMEOUT,
                   help=f"give up on a server that sends nothing for this long (default {TIMEOUT:g})")
    f.add_argument("--deadline", metavar="SECONDS", type=float, default=DEADLINE,
                   help=f"give up on a file (and try the next mirror) after this long in all "
                        f"(default {DEADLINE:g})")


def main(args) -> int:
    """``nnrnn data fetch``, the one subcommand."""
    for option in ("timeout", "deadline"):  # checked here too, to name the command line's flag
        try:
            check_seconds(**{option: getattr(args, option)})
        except OptionError as e:
            raise OptionError(f"--{e}") from None
    dest = fetch(args.name, dest=args.dest, mirrors=args.mirror, timeout=args.timeout, deadline=args.deadline,
                 log=lambda message: print(message, file=sys.stderr, flush=True))
    hint = ""
    if dest.resolve() != default_dir(args.name).expanduser().resolve():
        hint = " (the tasks look there when given it as their data folder"
        hint += f", or with NNRNN_DATA={dest.parent})" if dest.name == args.name else ")"
    print(f"{args.name}: all files in {dest}{hint}")
    return 0
