"""torchrun's processes: a refusal on any one rank ends every rank, each with the same line and exit code."""
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = ["train", "copy", "--batch-size", "8", "--hidden", "8", "--T", "5", "--steps", "2", "--no-progress"]
# a rank started by hand, as torchrun would start it; rank 1 refuses where only it reads (the checkpoint it would
# restore), rank 0 goes on into DDP's setup, which waits for rank 1
DRIVER = """
import os, sys
from nnrnn.errors import UserError
from nnrnn.training import train
if os.environ["RANK"] == "1":
    def refuse(*args, **kwargs):
        raise UserError("rank 1 cannot read the checkpoint")
    train.start = refuse
from nnrnn_cli.command import main
sys.exit(main(sys.argv[1:]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1", **extra}
    env.pop("NNRNN_DEBUG", None)
    return env


@pytest.mark.subprocess
def test_a_refusal_on_rank_1_only_ends_both_ranks_with_its_line(tmp_path):
    port = str(free_port())
    started = time.monotonic()
    ranks = [subprocess.Popen([sys.executable, "-c", DRIVER, *TINY, "--out", str(tmp_path / "run")],
                              env=environment(WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank),
                                              MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
             for rank in (0, 1)]
    ended = [rank.communicate(timeout=180) for rank in ranks]
    assert [rank.returncode for rank in ranks] == [2, 2], [err for _, err in ended]
    assert [err.strip().splitlines() for _, err in ended] == [["nnrnn: error: rank 1 cannot read the checkpoint"]] * 2
    assert time.monotonic() - started < 150  # not gloo's 30 minutes (starting two torch processes is most of it)


@pytest.mark.subprocess
def test_the_readmes_torchrun_line_on_a_folder_holding_a_run_ends_every_rank_in_one_line(tmp_path):
    """The issue's case: rank 0 refuses the folder (it holds a run) while rank 1 waits in DDP's setup."""
    (tmp_path / "run").mkdir()  # a run that logged an update
    (tmp_path / "run" / ".nnrnn-run").write_text("an nnrnn run folder\n")
    (tmp_path / "run" / "metrics.jsonl").write_text('{"step": 1, "split": "train", "loss": 1.0}\n')
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             "--log-dir", str(tmp_path / "logs"), "--redirects", "2", "-m", "nnrnn_cli", *TINY,
                             "--out", str(tmp_path / "run")],
                            env=environment(), capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert result.returncode != 0 and time.monotonic() - started < 150
    logs = sorted((tmp_path / "logs").rglob("stderr.log"))
    lines = [log.read_text().strip().splitlines() for log in logs]
    assert len(lines) == 2 and lines[0] == lines[1] and len(lines[0]) == 1, lines
    assert "already holds a run" in lines[0][0] and lines[0][0].startswith("nnrnn: error: ")
    assert re.findall(r"^\s+exitcode\s+:\s*(-?\d+)", result.stderr, re.M) == ["2", "2"], result.stderr[-3000:]
