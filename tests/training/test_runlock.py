"""The run lock on a filesystem that cannot lock: one line naming the folder and the fix, not a traceback."""
import errno
import os

import pytest

from nnrnn.training import runlock


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOLCK])
def test_a_filesystem_without_locks_is_one_line_naming_the_folder_and_the_fix(tmp_path, monkeypatch, capsys, code):
    from nnrnn_cli.command import main

    def unsupported(fd, operation):  # what flock answers on such a filesystem
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(runlock.fcntl, "flock", unsupported)
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    folder = tmp_path / "nfs" / "run"
    assert main(["train", "copy", "--hidden", "8", "--T", "5", "--steps", "2", "--out", str(folder)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"nnrnn: error: cannot lock {folder}: its filesystem does not support file locks (flock: "
                     f"{os.strerror(code)}); choose an --out on a filesystem that does (a local disk, or NFS with "
                     f"its lock service running)"]


def test_nnrnn_runs_does_not_call_every_run_on_such_a_filesystem_running(tmp_path, monkeypatch):
    import fcntl
    import json

    from nnrnn.training.runlog import run_summary
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"task": "copy", "model": "nnrnn", "hidden": 8}))
    (folder / "metrics.jsonl").write_text(json.dumps({"step": 5, "split": "valid", "loss": 0.5}) + "\n")
    (folder / ".lock").write_text("123\n")  # left by a run that ended

    def unsupported(fd, operation):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    monkeypatch.setattr(fcntl, "flock", unsupported)
    assert run_summary(folder, lambda task: ("loss", "min"))["status"] == "stopped at 5"
