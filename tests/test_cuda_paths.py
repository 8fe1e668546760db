"""Code paths that only run on CUDA (NCCL collectives, one GPU per rank under torchrun), exercised on the
CPU with torch's CUDA and process-group calls replaced: what each would hand to CUDA is checked."""
import torch

from nnrnn.training import distributed



def test_nccl_collectives_run_on_the_current_cuda_device(monkeypatch):
    monkeypatch.setattr(distributed.dist, "get_backend", lambda group=None: "nccl")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert distributed.collective_device() == torch.device("cuda", 1)
    monkeypatch.setattr(distributed.dist, "get_backend", lambda group=None: "gloo")
    assert distributed.collective_device() == torch.device("cpu")


def test_sum_stats_and_broadcast_put_their_tensors_on_the_collective_device(monkeypatch):
    seen = []
    monkeypatch.setattr(distributed.dist, "all_reduce", lambda t: seen.append(("all_reduce", t.device)))
    monkeypatch.setattr(distributed.dist, "broadcast", lambda t, src: seen.append(("broadcast", t.device)))
    calls = []
    monkeypatch.setattr(distributed, "collective_device", lambda: calls.append(1) or torch.device("cpu"))
    assert distributed.sum_stats({"loss": (2.0, 4)}, 2) == {"loss": (2.0, 4.0)}
    assert distributed.broadcast_float(0.5, 2) == 0.5
    assert len(calls) == 2 and [s[0] for s in seen] == ["all_reduce", "broadcast"]


def test_each_rank_takes_its_own_gpu_before_the_process_group(monkeypatch):
    chosen = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: chosen.append(torch.device(device)))
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(distributed.dist, "get_rank", lambda: 1)
    assert distributed.setup(torch.device("cuda")) == (1, 2)
    assert chosen == [torch.device("cuda", 1)]
    chosen.clear()
    distributed.setup(torch.device("cpu"))
    assert chosen == []


def test_resume_gives_the_cpu_generator_a_cpu_tensor_whatever_the_checkpoint_was_loaded_onto(tmp_path, monkeypatch):
    """On CUDA the checkpoint is loaded with map_location=cuda, which moves the saved CPU generator state
    there too, and torch.set_rng_state takes CPU byte tensors only."""
    from nnrnn.training import checkpoint
    from nnrnn.training.config import resolve_config
    from nnrnn.training.train import train

    class OnDevice:  # stands for a cuda tensor: not accepted by torch.set_rng_state, .cpu() brings it back
        def __init__(self, tensor):
            self.tensor = tensor

        def cpu(self):
            return self.tensor

    config = resolve_config({"task": "copy", "model": "rnn", "hidden": 8, "T": 4, "batch_size": 4, "steps": 2,
                             "progress": False, "out": str(tmp_path / "run")})
    train(config)
    real = checkpoint.load

    def load(path, map_location="cpu"):
        payload = real(path, map_location=map_location)
        if "rng" in payload:
            payload["rng"] = OnDevice(payload["rng"])
        return payload
    monkeypatch.setattr(checkpoint, "load", load)
    train({**config, "steps": 3}, resume=True)
