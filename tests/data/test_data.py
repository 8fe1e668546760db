"""nnrnn.data: IDX and ptb.char readers, data location, splits, and `fetch` against a local
HTTP server (127.0.0.1 only: any other connection attempt fails the test)."""
from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import socket
import struct
import tarfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnrnn.data import fetch as fetch_mod
from nnrnn.data.fetch import Dataset, FileSpec, fetch, fetch_file
from nnrnn.data.mnist import load_mnist, read_idx
from nnrnn.data.paths import default_dir
from nnrnn.data.ptb import EOS, UNKNOWN, load_ptb, read_ptb
from nnrnn.errors import UserError
from nnrnn_cli.command import make_parser


# ---------------------------------------------------------------------------- helpers
def start_server(handler, servers: list) -> str:
    """A threaded HTTP server on 127.0.0.1 (a free port) with ``handler``, added to ``servers``; its URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    servers.append(httpd)
    return f"http://127.0.0.1:{httpd.server_address[1]}/"


def stop_servers(servers: list) -> None:
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test may reach the internet; local servers are reached without any proxy."""
    real = socket.create_connection

    def local_only(address, *args, **kwargs):
        if address[0] not in ("127.0.0.1", "localhost"):
            raise AssertionError(f"test tried to connect to {address}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", local_only)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def idx_bytes(array: np.ndarray) -> bytes:
    array = np.asarray(array, dtype=np.uint8)
    return struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_idx(path: Path, array: np.ndarray, gz: bool = False) -> Path:
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return path


def fake_mnist(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    images[:, 0, 0] = np.arange(n) % 256        # so rows can be told apart
    images[:, 0, 1] = np.arange(n) // 256
    return images, rng.integers(0, 10, n).astype(np.uint8)


def image_ids(images: np.ndarray) -> np.ndarray:
    return images[:, 0, 0].astype(np.int64) + 256 * images[:, 0, 1].astype(np.int64)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def server(tmp_path):
    """serve(folder) -> base URL of a threaded HTTP server on 127.0.0.1 serving that folder."""
    servers = []

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    def serve(folder: Path) -> str:
        return start_server(functools.partial(Quiet, directory=str(folder)), servers)

    yield serve
    stop_servers(servers)


def dead_url() -> str:
    """A 127.0.0.1 URL on which nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


# ---------------------------------------------------------------------------- IDX reader
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_raw_and_gzip(tmp_path, gz):
    images, labels = fake_mnist(5)
    img = read_idx(write_idx(tmp_path / "img", images, gz), 2051)
    lab = read_idx(write_idx(tmp_path / "lab", labels, gz), 2049)
    assert img.dtype == np.uint8 and img.shape == (5, 28, 28)
    np.testing.assert_array_equal(img, images)
    np.testing.assert_array_equal(lab, labels)


def test_read_idx_wrong_magic(tmp_path):
    path = write_idx(tmp_path / "labels-as-images", np.zeros(4), gz=True)
    with pytest.raises(ValueError, match="labels-as-images.*magic number 2049, expected 2051") as raised:
        read_idx(path, 2051)  # a ValueError, as a parser's, that the command line prints as one line
    assert isinstance(raised.value, UserError)
    (tmp_path / "junk").write_bytes(b"hello world, not an IDX file")
    with pytest.raises(ValueError, match="junk"):
        read_idx(tmp_path / "junk", 2051)


def test_read_idx_truncated_gzip(tmp_path):
    full = gzip.compress(idx_bytes(fake_mnist(20)[0]))
    path = tmp_path / "cut-images-idx3-ubyte.gz"
    path.write_bytes(full[: len(full) // 2])
    with pytest.raises(ValueError, match=r"cut-images-idx3-ubyte\.gz is a truncated or corrupt gzip"):
        read_idx(path, 2051)


def test_read_idx_size_mismatch(tmp_path):
    data = idx_bytes(fake_mnist(3)[0])
    path = tmp_path / "short"
    path.write_bytes(data[:-10])
    with pytest.raises(ValueError, match="short holds .* data bytes but its header"):
        read_idx(path, 2051)
    path.write_bytes(data + b"extra")
    with pytest.raises(UserError, match="truncated or corrupt"):
        read_idx(path, 2051)


def test_mnist_rejects_wrong_image_size(tmp_path):
    write_idx(tmp_path / "t10k-images-idx3-ubyte", np.zeros((10, 8, 8)))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(10))
    with pytest.raises(UserError, match="not 28x28"):
        load_mnist(tmp_path)


# ---------------------------------------------------------------------------- MNIST splits and location
def test_mnist_test_only_split(tmp_path):
    images, labels = fake_mnist(10_000)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", images)          # raw
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels, gz=True)
    data = load_mnist(tmp_path)
    assert data.split == "test-only"
    assert (len(data.train_labels), len(data.valid_labels), len(data.test_labels)) == (8000, 1000, 1000)
    ids = [image_ids(x) for x in (data.train_images, data.valid_images, data.test_images)]
    assert sorted(np.concatenate(ids).tolist()) == list(range(10_000))            # a partition
    np.testing.assert_array_equal(data.train_labels, labels[ids[0]])               # labels follow images
    assert "only MNIST's test set was found" in data.note and "8,000 train / 1,000 valid / 1,000 test" in data.note
    again = load_mnist(tmp_path)
    np.testing.assert_array_equal(again.valid_images, data.valid_images)          # fixed seed


def test_mnist_official_split(tmp_path):
    train_images, train_labels = fake_mnist(10_100, seed=1)
    test_images, test_labels = fake_mnist(30, seed=2)
    write_idx(tmp_path / "train-images-idx3-ubyte", train_images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", train_labels)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", test_images)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", test_labels)
    data = load_mnist(tmp_path)
    assert data.split == "official" and data.note is None
    assert (len(data.train_labels), len(data.valid_labels)) == (100, 10_000)
    rng = np.random.RandomState(1234)
    rng.permutation(784)
    order = rng.permutation(10_100)                                    # the paper code's split
    np.testing.assert_array_equal(image_ids(data.train_images), order[:100])
    np.testing.assert_array_equal(data.test_images, test_images)


def test_mnist_missing_files(tmp_path):
    with pytest.raises(UserError) as info:
        load_mnist(tmp_path / "nowhere")
    message = str(info.value)
    assert "t10k-images-idx3-ubyte.gz" in message and "t10k-labels-idx1-ubyte.gz" in message
    assert str(tmp_path / "nowhere") in message and "nnrnn data fetch mnist" in message
    images, labels = fake_mnist(20)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", images)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", labels)
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    with pytest.raises(UserError, match="found train-images-idx3-ubyte but not train-labels-idx1-ubyte"):
        load_mnist(tmp_path)


def test_data_location(tmp_path, monkeypatch):
    images, labels = fake_mnist(20)
    root = tmp_path / "root"
    (root / "mnist").mkdir(parents=True)
    write_idx(root / "mnist" / "t10k-images-idx3-ubyte", images)
    write_idx(root / "mnist" / "t10k-labels-idx1-ubyte", labels)
    assert load_mnist(root).folder == root / "mnist"                 # data_dir may be the parent ...
    assert load_mnist(root / "mnist").folder == root / "mnist"       # ... or the folder itself
    monkeypatch.setenv("NNRNN_DATA", str(root))
    assert load_mnist().folder == root / "mnist"
    monkeypatch.delenv("NNRNN_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_dir("mnist") == tmp_path / "cache" / "nnrnn" / "mnist"
    with pytest.raises(UserError, match=str(tmp_path / "cache" / "nnrnn" / "mnist")):
        load_mnist()


SPELLINGS = ("t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz", "t10k-images.idx3-ubyte",
             "t10k-images.idx3-ubyte.gz")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copies=st.lists(st.tuples(st.sampled_from(SPELLINGS), st.booleans()), min_size=1, max_size=4,
                       unique_by=lambda c: c[0]))
def test_copies_of_one_mnist_file_are_read_only_when_they_agree(tmp_path_factory, copies):
    """Several spellings of one file (raw, gzipped, the .idx variant), each with the official or another
    content: copies that agree are read; copies that differ are a UserError naming two of them, whichever
    order they are looked up in."""
    folder = tmp_path_factory.mktemp("mnist")
    images, labels = fake_mnist(20)
    other = images.copy()
    other[3, 5, 5] ^= 1  # one pixel apart: a different copy of the same file
    write_idx(folder / "t10k-labels-idx1-ubyte", labels)
    for name, altered in copies:
        write_idx(folder / name, other if altered else images, gz=name.endswith(".gz"))
    if len({altered for _, altered in copies}) > 1:
        with pytest.raises(UserError, match="two copies of t10k-images-idx3-ubyte with different contents") as info:
            load_mnist(folder)
        named = str(info.value).split(" are two copies")[0].split(" and ")
        altered = dict(copies)
        assert len(named) == 2 and "delete" in str(info.value)
        assert altered[Path(named[0]).name] != altered[Path(named[1]).name]  # the two it names do differ
    else:
        data = load_mnist(folder)
        expected = other if copies[0][1] else images
        read = np.concatenate([data.train_images, data.valid_images, data.test_images])
        assert sorted(map(bytes, read)) == sorted(map(bytes, expected))


def test_a_data_dir_whose_subfolder_holds_the_data_set_too_is_ambiguous(tmp_path):
    images, labels = fake_mnist(20)
    for folder in (tmp_path, tmp_path / "mnist"):
        folder.mkdir(exist_ok=True)
        write_idx(folder / "t10k-images-idx3-ubyte", images)
        write_idx(folder / "t10k-labels-idx1-ubyte", labels)
    with pytest.raises(UserError, match=f"both {tmp_path} and {tmp_path / 'mnist'} hold mnist files"):
        load_mnist(tmp_path)
    assert load_mnist(tmp_path / "mnist").folder == tmp_path / "mnist"  # the data set's own folder is not ambiguous


# ---------------------------------------------------------------------------- PTB reader
def test_read_ptb(tmp_path):
    path = tmp_path / "ptb.char.valid.txt"
    path.write_text("a b _ c\n < u n k > _ a \n\n b \n ")    # blank line kept; final whitespace is no line
    assert read_ptb(path) == ["ab_c", "<unk>_a", "", "b"]
    (tmp_path / "word.txt").write_text("the cat sat\n")
    with pytest.raises(ValueError, match="multi-character token 'the'.*word-level"):
        read_ptb(tmp_path / "word.txt")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(ValueError, match="no characters"):
        read_ptb(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("a b \xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt is not a text file .*not UTF-8"):  # a parser's type
        read_ptb(tmp_path / "latin1.txt")


def test_load_ptb_without_train(tmp_path):
    valid = [" ".join("line_%d" % i) for i in range(20)]
    (tmp_path / "ptb.char.valid.txt").write_text("\n ".join(valid) + "\n ")
    (tmp_path / "ptb.char.test.txt").write_text("z y x\n")
    corpus = load_ptb(tmp_path)
    assert corpus.split == "valid-as-train"
    # the training lines' symbols, the newline, and one unknown symbol for what only the test has
    train_symbols = set("".join(valid[:18]).replace(" ", ""))
    assert corpus.vocab == sorted(train_symbols | {EOS}) + [UNKNOWN]
    assert corpus.vocab[0] == EOS
    decode = lambda ids: "".join(corpus.vocab[i] for i in ids)
    assert decode(corpus.train) == "".join(f"line_{i}\n" for i in range(18))      # first 90% of the lines
    assert decode(corpus.valid) == "line_18\nline_19\n"
    assert decode(corpus.test) == UNKNOWN * 3 + "\n"  # z, y, x never occur in training
    assert "first 18 lines (90%)" in corpus.note and "nnrnn data fetch ptb" in corpus.note
    assert "3 in the test text ('x', 'y', 'z')" in corpus.note


def test_load_ptb_official_and_missing(tmp_path):
    (tmp_path / "ptb.char.train.txt").write_text("a b\nq\n")
    with pytest.raises(UserError, match="found ptb.char.train.txt but not ptb.char.valid.txt"):
        load_ptb(tmp_path)
    (tmp_path / "ptb.char.valid.txt").write_text("b a\n")
    (tmp_path / "ptb.char.test.txt").write_text("c\n")
    corpus = load_ptb(tmp_path)
    assert corpus.split == "official"
    assert corpus.vocab == [EOS, "a", "b", "q", UNKNOWN]         # the training text's, sorted, then the unknown
    assert corpus.train.tolist() == [1, 2, 0, 3, 0]
    assert corpus.test.tolist() == [4, 0] and "1 in the test text ('c')" in corpus.note
    (tmp_path / "ptb.char.test.txt").write_text("q a\n")
    clean = load_ptb(tmp_path)
    assert clean.note is None and clean.vocab == [EOS, "a", "b", "q"]  # nothing unseen: no unknown symbol
    with pytest.raises(UserError, match="ptb.char.valid.txt and ptb.char.test.txt.*nnrnn data fetch ptb"):
        load_ptb(tmp_path / "nowhere")


def test_load_ptb_says_what_it_did_with_foreign_symbols_and_tabs(tmp_path):
    (tmp_path / "ptb.char.train.txt").write_text("a é b\n中 a\n")
    (tmp_path / "ptb.char.valid.txt").write_text("a\tb\n")
    (tmp_path / "ptb.char.test.txt").write_text("b a\n")
    corpus = load_ptb(tmp_path)
    assert "é" in corpus.vocab and "中" in corpus.vocab and UNKNOWN not in corpus.vocab
    assert "outside Penn Treebank's printable-ASCII alphabet ('é', '中'); they are kept" in corpus.note
    assert "ptb.char.valid.txt holds 1 whitespace character(s)" in corpus.note and "'\\t'" in corpus.note



def test_load_ptb_reads_unseen_characters_beside_training_symbols_above_the_unknown_symbol(tmp_path):
    """An emoji (beyond U+FFFD) in the training text and a character only the test text has: each symbol keeps
    its own id and the unseen one reads as the unknown symbol."""
    (tmp_path / "ptb.char.train.txt").write_text("a \U0001F600\nb\n")
    (tmp_path / "ptb.char.valid.txt").write_text("\U0001F600 b\n")
    (tmp_path / "ptb.char.test.txt").write_text("z a\n")
    corpus = load_ptb(tmp_path)
    decode = lambda ids: "".join(corpus.vocab[i] for i in ids)
    assert decode(corpus.train) == "a\U0001F600\nb\n" and decode(corpus.valid) == "\U0001F600b\n"
    assert decode(corpus.test) == UNKNOWN + "a\n"
    assert sorted(set(corpus.vocab)) == sorted(corpus.vocab)  # no symbol twice


def test_load_ptb_with_the_unknown_symbol_in_the_training_text_has_it_once(tmp_path):
    (tmp_path / "ptb.char.train.txt").write_text(f"a {UNKNOWN}\nb\n")
    (tmp_path / "ptb.char.valid.txt").write_text("a b\n")
    (tmp_path / "ptb.char.test.txt").write_text("z a\n")
    corpus = load_ptb(tmp_path)
    assert corpus.vocab == [EOS, "a", "b", UNKNOWN]
    assert corpus.test.tolist() == [3, 1, 0] and "1 in the test text ('z')" in corpus.note

# ---------------------------------------------------------------------------- fetch
def test_fetch_md5_mismatch_then_next_mirror(tmp_path, server):
    good, bad, dest = tmp_path / "good", tmp_path / "bad", tmp_path / "dest"
    good.mkdir(), bad.mkdir()
    payload = b"the real file\n" * 100
    (good / "file.bin").write_bytes(payload)
    (bad / "file.bin").write_bytes(b"a tampered copy\n")
    messages = []
    path = fetch_file("file.bin", dest, [server(bad), server(good)], md5=md5(payload), log=messages.append)
    assert path == dest / "file.bin" and path.read_bytes() == payload
    assert sorted(p.name for p in dest.iterdir()) == ["file.bin"]          # no temporary files left
    assert any("rejected (md5" in m for m in messages)
    # already present and verified: no mirror is contacted at all
    assert fetch_file("file.bin", dest, [dead_url()], md5=md5(payload)) == path


def test_fetch_all_mirrors_fail(tmp_path, server):
    bad, empty = tmp_path / "bad", tmp_path / "empty"
    bad.mkdir(), empty.mkdir()
    (bad / "file.bin").write_bytes(b"wrong")
    mirrors = [server(bad), server(empty), dead_url()]
    with pytest.raises(UserError) as info:
        fetch_file("file.bin", tmp_path / "dest", mirrors, md5=md5(b"right"), timeout=5)
    message = str(info.value)
    assert "could not fetch file.bin" in message and "--mirror" in message
    for url in mirrors:
        assert url in message
    assert "HTTP 404" in message and "md5" in message
    assert list((tmp_path / "dest").iterdir()) == []


def test_fetch_dataset_with_local_mirror(tmp_path, server, monkeypatch):
    images, labels = fake_mnist(12)
    src = tmp_path / "mirror"
    src.mkdir()
    files = {"t10k-images-idx3-ubyte.gz": gzip.compress(idx_bytes(images)),
             "t10k-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(labels))}
    for name, data in files.items():
        (src / name).write_bytes(data)
    monkeypatch.setitem(fetch_mod.DATASETS, "mnist",
                        Dataset(tuple(FileSpec(n, md5(d)) for n, d in files.items()), (dead_url(),)))
    monkeypatch.setenv("NNRNN_DATA", str(tmp_path / "data"))
    with pytest.raises(UserError, match="could not fetch t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz"):
        fetch("mnist", timeout=5)                                   # the (dead) default mirror
    dest = fetch("mnist", mirrors=[server(src)])                    # --mirror replaces the defaults
    assert dest == tmp_path / "data" / "mnist"
    data = load_mnist()
    assert len(data.train_labels) + len(data.valid_labels) + len(data.test_labels) == 12


def test_fetch_from_archive_and_cli(tmp_path, server, monkeypatch, capsys):
    texts = {"ptb.char.train.txt": "a b _ c\n d\n ", "ptb.char.valid.txt": "c a\n ", "ptb.char.test.txt": "b\n "}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in texts.items():
            data = text.encode()
            info = tarfile.TarInfo(f"./simple-examples/data/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    src = tmp_path / "mirror"
    src.mkdir()
    (src / "simple-examples.tgz").write_bytes(buf.getvalue())
    specs = (FileSpec("ptb.char.train.txt", None, lambda p: None if len(read_ptb(p)) == 2 else "wrong line count"),
             FileSpec("ptb.char.valid.txt", md5(texts["ptb.char.valid.txt"].encode())),
             FileSpec("ptb.char.test.txt", md5(texts["ptb.char.test.txt"].encode())))
    monkeypatch.setitem(fetch_mod.DATASETS, "ptb", Dataset(specs, (dead_url() + "x.tgz",)))
    parser = make_parser()
    dest = tmp_path / "ptb"
    # --data-dir, as train names the folder; --dest, its older name, says the same
    assert parser.parse_args(["data", "fetch", "ptb", "--dest", str(dest)]).dest == str(dest)
    args = parser.parse_args(["data", "fetch", "ptb", "--data-dir", str(dest), "--mirror", dead_url(),
                              server(src) + "simple-examples.tgz", "--timeout", "5"])
    assert args.handler(args) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(texts)
    assert f"ptb: all files in {dest}" in capsys.readouterr().out
    corpus = load_ptb(dest)
    assert corpus.split == "official" and corpus.vocab == [EOS, "_", "a", "b", "c", "d"]


def test_fetch_unknown_dataset():
    with pytest.raises(UserError, match="unknown data set 'cifar'"):
        fetch("cifar")


def test_real_checksums_match_shared_data():
    """The md5s in DATASETS agree with the shared data's MD5SUMS (when that folder exists)."""
    sums = Path(__file__).resolve().parents[3] / "shared" / "data" / "MD5SUMS"
    if not sums.is_file():
        pytest.skip(f"{sums} not present")
    known = {line.split()[1].split("/")[-1]: line.split()[0] for line in sums.read_text().splitlines() if line.strip()}
    specs = {s.name: s.md5 for d in ("mnist", "ptb") for s in fetch_mod.DATASETS[d].files}
    for name, digest in known.items():
        assert specs[name] == digest
    assert specs["ptb.char.train.txt"] is None


# ---------------------------------------------------------------------------- fetch: servers that misbehave
PAYLOAD = b"0123456789" * 100  # 1,000 bytes


@pytest.fixture
def bad_server():
    """bad_server(kind) -> base URL of a 127.0.0.1 server that answers every GET with a Content-Length of
    1,000 bytes and then: "slow" sends one byte per 0.2 s (at most 1,000, stopping when the client goes),
    "truncated" sends 500 bytes and closes, "reset" sends 100 bytes and resets the connection;
    "slow-headers" sends even its status line and headers one byte per 0.2 s."""
    servers = []

    class Handler(http.server.BaseHTTPRequestHandler):
        kind = "slow"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.kind == "slow-headers":
                head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(PAYLOAD)}\r\n\r\n".encode() + PAYLOAD
                try:
                    for i in range(len(head)):  # bounded, and ended early by the client
                        self.wfile.write(head[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD)))
            self.end_headers()
            self.wfile.flush()
            try:
                if self.kind == "slow":
                    for i in range(len(PAYLOAD)):  # bounded: 200 s at most, ended early by the client
                        self.wfile.write(PAYLOAD[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                elif self.kind == "truncated":
                    self.wfile.write(PAYLOAD[:500])
                    self.wfile.flush()
                    self.close_connection = True
                elif self.kind == "reset":
                    self.wfile.write(PAYLOAD[:100])
                    self.wfile.flush()
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
            except OSError:  # the client gave up
                pass

    def serve(kind: str) -> str:
        return start_server(type(f"{kind.title()}Handler", (Handler,), {"kind": kind}), servers)

    yield serve
    stop_servers(servers)


def no_part_files(folder: Path) -> bool:
    return not any(p.name.endswith(".part") for p in folder.iterdir()) if folder.is_dir() else True


@pytest.mark.parametrize("kind", ["slow", "slow-headers"])
def test_fetch_a_slow_server_ends_at_the_deadline(tmp_path, bad_server, kind):
    url = bad_server(kind)
    start = time.monotonic()
    with pytest.raises(UserError) as info:
        fetch_file("file.bin", tmp_path / "dest", [url], md5=md5(PAYLOAD), timeout=5, deadline=1.0)
    elapsed = time.monotonic() - start
    assert elapsed < 4, f"took {elapsed:.1f} s for a 1 s deadline"
    message = str(info.value)
    assert "\n" not in message
    assert "file.bin" in message and "127.0.0.1" in message and "1 s deadline" in message
    assert "raise --deadline or pass a faster --mirror" in message
    assert list((tmp_path / "dest").iterdir()) == []


def test_fetch_a_slow_mirror_ends_at_the_deadline_and_the_next_is_tried(tmp_path, bad_server, server):
    src = tmp_path / "mirror"
    src.mkdir()
    (src / "file.bin").write_bytes(PAYLOAD)
    start = time.monotonic()
    messages = []
    path = fetch_file("file.bin", tmp_path / "dest", [bad_server("slow"), server(src)], md5=md5(PAYLOAD),
                      timeout=5, deadline=1.0, log=messages.append)
    assert time.monotonic() - start < 4
    assert path.read_bytes() == PAYLOAD and sorted(p.name for p in path.parent.iterdir()) == ["file.bin"]
    assert any("deadline" in m for m in messages)


def test_fetch_a_truncated_response_is_named_and_removed(tmp_path, bad_server):
    with pytest.raises(UserError) as info:
        fetch_file("file.bin", tmp_path / "dest", [bad_server("truncated")], md5=None, timeout=5, deadline=10)
    assert "closed after 500 of its 1,000 bytes (a truncated response)" in str(info.value)
    assert list((tmp_path / "dest").iterdir()) == []  # not installed, though no md5 would have caught it


def test_fetch_a_reset_connection_leaves_nothing(tmp_path, bad_server):
    with pytest.raises(UserError) as info:
        fetch_file("file.bin", tmp_path / "dest", [bad_server("reset")], md5=md5(PAYLOAD), timeout=5, deadline=10)
    assert "file.bin" in str(info.value) and "check the internet connection" in str(info.value)
    assert list((tmp_path / "dest").iterdir()) == []


def test_fetch_a_checksum_mismatch_says_so_and_leaves_nothing(tmp_path, server):
    src = tmp_path / "mirror"
    src.mkdir()
    (src / "file.bin").write_bytes(b"a tampered copy\n")
    with pytest.raises(UserError) as info:
        fetch_file("file.bin", tmp_path / "dest", [server(src)], md5=md5(PAYLOAD), timeout=5)
    message = str(info.value)
    assert f"md5 {md5(b'a tampered copy' + bytes([10]))} instead of {md5(PAYLOAD)}" in message
    assert "pass --mirror with a URL that serves the official files" in message
    assert "internet connection" not in message  # the server answered: the network is not to blame
    assert list((tmp_path / "dest").iterdir()) == []


@pytest.mark.parametrize("where", ["download", "verify", "extract"])
def test_fetch_interrupted_leaves_no_part_file(tmp_path, server, monkeypatch, where):
    src = tmp_path / "mirror"
    src.mkdir()
    (src / "file.bin").write_bytes(PAYLOAD)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("data/file.bin")
        info.size = len(PAYLOAD)
        tar.addfile(info, io.BytesIO(PAYLOAD))
    (src / "files.tgz").write_bytes(buf.getvalue())

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    mirror = server(src)
    if where == "download":
        monkeypatch.setattr(fetch_mod, "_content_length", interrupt)
    elif where == "verify":
        monkeypatch.setattr(fetch_mod, "md5sum", interrupt)
    else:
        monkeypatch.setattr(tarfile.TarFile, "extractfile", interrupt)
        mirror += "files.tgz"
    with pytest.raises(KeyboardInterrupt):
        fetch_file("file.bin", tmp_path / "dest", [mirror], md5=md5(PAYLOAD), timeout=5)
    assert list((tmp_path / "dest").iterdir()) == []


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "5", True])
@pytest.mark.parametrize("name", ["timeout", "deadline"])
def test_fetch_refuses_a_timeout_that_is_not_a_positive_number(tmp_path, name, value):
    from nnrnn.errors import OptionError
    with pytest.raises(OptionError, match=f"^{name} must be a positive number of seconds"):
        fetch_file("file.bin", tmp_path / "dest", [dead_url()], **{name: value})
    assert not (tmp_path / "dest").exists()


def test_fetch_a_stalled_server_is_named_with_the_timeout(tmp_path, bad_server):
    start = time.monotonic()
    with pytest.raises(UserError) as info:  # one byte per 0.2 s: a 0.05 s read timeout runs out first
        fetch_file("file.bin", tmp_path / "dest", [bad_server("slow")], md5=md5(PAYLOAD), timeout=0.05, deadline=30)
    assert time.monotonic() - start < 4
    assert "no data for 0.05 s (the --timeout of one read)" in str(info.value)
    assert list((tmp_path / "dest").iterdir()) == []
