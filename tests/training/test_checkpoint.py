"""nnrnn.training.checkpoint: atomic writes and safe loading."""

import os
import stat

import pytest
import torch
from helpers import one_line, run_cli

from nnrnn.training import checkpoint
from nnrnn.errors import UserError


def test_a_failed_checkpoint_write_leaves_the_previous_one_readable(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    checkpoint.save(path, {"step": 1, "model": {"w": torch.ones(3)}})
    real_save = torch.save

    during = []

    def dies_half_way(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half of a zip archive")
        during.extend(sorted(p.name for p in tmp_path.iterdir()))
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(UserError, match="No space left on device.*the previous last.pt, if any, is unchanged"):
        checkpoint.save(path, {"step": 2, "model": {"w": torch.zeros(3)}})
    monkeypatch.setattr(torch, "save", real_save)
    assert checkpoint.load(path)["step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary left behind
    # the half-written file was a hidden temporary beside the target, named after it
    assert len(during) == 2 and during[0].startswith(".last.pt.") and during[0].endswith(".tmp")
    checkpoint.save(tmp_path / "new" / "folders" / "last.pt", {"step": 4})  # missing folders are made
    assert checkpoint.load(tmp_path / "new" / "folders" / "last.pt")["step"] == 4


class NotAllowedInACheckpoint:
    """Any class outside torch's allow-list: unpickling it could run arbitrary code."""


def test_checkpoint_load_maps_storages_and_refuses_arbitrary_objects(tmp_path):
    path = tmp_path / "last.pt"
    checkpoint.save(path, {"step": 3, "model": {"w": torch.ones(2)}})
    seen = []

    def where(storage, location):  # a map_location function sees every storage (a GPU run read on a CPU)
        seen.append(location)
        return storage
    assert checkpoint.load(path, map_location=where)["step"] == 3 and seen == ["cpu"]
    torch.save({"format": checkpoint.FORMAT, "version": checkpoint.VERSION, "step": NotAllowedInACheckpoint()},
               tmp_path / "foreign.pt")
    with pytest.raises(UserError, match="not a readable nnrnn checkpoint"):
        checkpoint.load(tmp_path / "foreign.pt")  # only tensors and plain containers are unpickled


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_files_get_the_mode_the_users_umask_gives(umask, tmp_path):
    previous = os.umask(umask)
    try:
        checkpoint.atomic_write(tmp_path / "config.json", lambda f: f.write(b"{}"))
        checkpoint.save(tmp_path / "last.pt", {"step": 1})
    finally:
        os.umask(previous)
    for name in ("config.json", "last.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name


def test_a_full_disk_is_one_line_and_the_previous_checkpoint_stays(capsys, finished, tmp_path, monkeypatch):
    import errno
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = (run / "checkpoints" / "last.pt").read_bytes()
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "8", "--checkpoint-every", "2"),
             "No space left on device", "continue with --resume")
    monkeypatch.setattr(os, "fsync", real)
    assert (run / "checkpoints" / "last.pt").read_bytes() == before
    assert not list((run / "checkpoints").glob(".*.tmp"))
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "8")[0] == 0

