"""nnrnn.kernels (operations, onednn, extension, memory): oneDNN for large float32 CPU products (torch elsewhere),
the compiled loops, the allocator setting.
(Which kernel runs where is nnrnn.kernels.policy's: tests/kernels/test_kernel_policy.py.)"""
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import nnrnn
from nnrnn.kernels import extension, memory, onednn
from nnrnn.kernels import operations as kernels
from nnrnn.kernels import policy as kernel_policy


def relative_error(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


@pytest.mark.parametrize("shape", [(256, 300, 256), (260, 256, 512)])
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_value_and_gradients_match_float64(shape, transposed, monkeypatch):
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    monkeypatch.setenv("NNRNN_ONEDNN", "1")  # the oneDNN path on any CPU
    kernel_policy.reset()  # the policy reads the environment once
    m, k, n = shape
    g = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g).t() if transposed else torch.randn(k, n, generator=g)  # a strided b too
    a.requires_grad_(True)
    b.requires_grad_(True)
    weights = torch.randn(m, n, generator=g)
    out = kernels.matmul(a, b)
    assert out.grad_fn is not None and type(out.grad_fn).__name__ == "MatMulBackward"
    grad_a, grad_b = torch.autograd.grad((out * weights).sum(), (a, b))
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ref = a64 @ b64
    ref_a, ref_b = torch.autograd.grad((ref * weights.double()).sum(), (a64, b64))
    assert relative_error(out, ref) < 1e-6
    assert relative_error(grad_a, ref_a) < 1e-6 and relative_error(grad_b, ref_b) < 1e-6


def test_matmul_refuses_gradients_of_gradients(monkeypatch):
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    monkeypatch.setenv("NNRNN_ONEDNN", "1")
    kernel_policy.reset()  # the policy reads the environment once
    a = torch.randn(256, 256, requires_grad=True)
    out = kernels.matmul(a, a)
    grad, = torch.autograd.grad(out.pow(2).sum(), a, create_graph=True)
    with pytest.raises(RuntimeError, match=r"oneDNN matrix product .*create_graph=True.*NNRNN_ONEDNN=0"):
        grad.sum().backward()


@pytest.mark.parametrize("a,b", [(torch.randn(128, 300), torch.randn(300, 256)),       # a side below 256
                                 (torch.randn(300, 300).double(), torch.randn(300, 300).double()),
                                 (torch.randn(2, 256, 256), torch.randn(2, 256, 256))])  # batched
def test_matmul_falls_back_to_torch(a, b, monkeypatch):
    monkeypatch.setenv("NNRNN_ONEDNN", "1")
    kernel_policy.reset()  # the policy reads the environment once
    out = kernels.matmul(a, b)
    assert torch.equal(out, torch.matmul(a, b))


@pytest.mark.parametrize("preferred", [True, False])
def test_linear_matches_torch_on_every_path(preferred, monkeypatch):
    """The recurrence's input projection (3-D input, bias) and input gradient (a transposed weight view, no
    bias) by kernels.linear: oneDNN at ≥ 1024 rows and a side ≥ 128 where preferred, torch elsewhere."""
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    monkeypatch.setenv("NNRNN_ONEDNN", "1" if preferred else "0")
    kernel_policy.reset()  # the policy reads the environment once
    calls = []
    monkeypatch.setattr(onednn, "kernel", lambda op=onednn.kernel(): lambda *args: calls.append(1) or op(*args))
    g = torch.Generator().manual_seed(3)
    for x, weight, bias in ((torch.randn(40, 32, 7, generator=g), torch.randn(256, 7, generator=g),
                             torch.randn(256, generator=g)),
                            (torch.randn(1280, 256, generator=g), torch.randn(256, 9, generator=g).t(), None),
                            (torch.randn(8, 2, 7, generator=g), torch.randn(300, 7, generator=g), None)):
        out = kernels.linear(x, weight, bias)
        want = x.double() @ weight.double().t() + (0 if bias is None else bias.double())
        assert out.shape == want.shape and out.dtype == torch.float32 and out.is_contiguous()
        assert relative_error(out, want) < 1e-6
    assert len(calls) == (2 if preferred else 0)  # the 16-row product goes to torch in any case


def test_onednn_is_preferred_only_with_avx512_unless_forced(monkeypatch):
    """The thresholds' rule (NNRNN_TUNE=0, as in the suite): oneDNN where torch reports AVX-512, unless
    NNRNN_ONEDNN says otherwise; with it off, N × N products go to torch.mm."""
    from nnrnn.kernels.policy import onednn_preferred
    from nnrnn.kernels.settings import Settings
    for capability, expected in (("AVX2", False), ("AVX512", True), ("DEFAULT", False)):
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
        monkeypatch.delenv("NNRNN_ONEDNN", raising=False)
        assert onednn_preferred(Settings.read()) is expected
        monkeypatch.setenv("NNRNN_ONEDNN", "1")
        kernel_policy.reset()  # the policy reads the environment once
        assert onednn_preferred(Settings.read()) is True
        monkeypatch.setenv("NNRNN_ONEDNN", "0")
        kernel_policy.reset()  # the policy reads the environment once
        assert onednn_preferred(Settings.read()) is False
    kernel_policy.reset()
    a = torch.randn(512, 512, requires_grad=True)
    assert kernels.matmul(a, a).grad_fn is not None and type(kernels.matmul(a, a).grad_fn).__name__ == "MmBackward0"


@pytest.mark.parametrize("value, expected", [("0", False), ("false", False), ("FALSE", False), ("no", False),
                                             ("off", False), (" Off ", False), ("1", True), ("true", True),
                                             ("on", True), ("yes", True), ("", None)])
@pytest.mark.parametrize("name", ["NNRNN_CPP", "NNRNN_ONEDNN", "NNRNN_DEBUG", "NNRNN_KEEP_FREED_MEMORY"])
def test_boolean_environment_variables_read_0_false_no_off_as_off(monkeypatch, name, value, expected):
    from nnrnn.environment import flag
    monkeypatch.setenv(name, value)
    assert flag(name, default=None) is expected
    monkeypatch.delenv(name)
    assert flag(name, default=None) is None and flag(name) is False and flag(name, default=True) is True


def test_nnrnn_onednn_off_and_nnrnn_cpp_false_read_as_off(monkeypatch, fresh_loops):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    for off in ("off", "false", "no", "0"):
        monkeypatch.setenv("NNRNN_ONEDNN", off)
        kernel_policy.reset()  # the policy reads the environment once
        assert kernel_policy.onednn_preferred(kernel_policy.Settings.read()) is False, off
    monkeypatch.setenv("NNRNN_CPP", "false")
    kernel_policy.reset()
    monkeypatch.setattr(extension, "_build_loops", lambda *a: pytest.fail("must not compile"))
    assert extension.recurrence_loops() is None


@pytest.mark.subprocess
def test_nnrnn_onednn_is_read_by_the_policy_in_a_new_process():
    code = "from nnrnn.kernels import settings; print(settings.current().onednn)"
    repo = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    for value, expected in (("off", "False"), ("on", "True")):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PYTHONPATH": repo, "NNRNN_ONEDNN": value})
        assert result.stdout.strip() == expected, (value, result.stderr)


# ----------------------------------------------------------------------------- compiled time loops

@pytest.fixture
def fresh_loops(monkeypatch, tmp_path):
    """recurrence_loops() as in a new process, caching into tmp_path."""
    monkeypatch.setattr(extension, "_loops", {})
    monkeypatch.setenv("NNRNN_EXTENSIONS_DIR", str(tmp_path))
    return tmp_path


def test_failed_build_says_why_in_one_line_once_and_training_falls_back_to_python(fresh_loops, monkeypatch,
                                                                                   capsys):
    def no_compiler(name, target):  # what torch raises when the compiler is missing
        raise RuntimeError(
            "Error building extension 'x': [1/2] /nonexistent/c++ -MMD -c loops.cpp -o loops.o \n"
            "FAILED: loops.o \n/nonexistent/c++ -MMD -c loops.cpp -o loops.o \n"
            "/bin/sh: 1: /nonexistent/c++: not found\nninja: build stopped: subcommand failed.\n")
    monkeypatch.setattr(extension, "_build_loops", no_compiler)
    assert extension.recurrence_loops() is None
    assert extension.recurrence_loops() is None  # no second attempt, no second message
    assert extension.loops_unavailable_reason() == "/bin/sh: 1: /nonexistent/c++: not found"
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "unavailable (/bin/sh: 1: /nonexistent/c++: not found)" in lines[0]
    assert "install g++" in lines[0] and "NNRNN_CPP=0" in lines[0]
    model = nnrnn.create("nnrnn", 3, 16)
    out, _ = model(torch.randn(5, 2, 3))
    out.sum().backward()  # the Python loops did the work
    assert model.weight_hh_l0.shape == (16, 16)


def test_nnrnn_cpp_0_turns_the_compiled_loops_off(fresh_loops, monkeypatch):
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    monkeypatch.setattr(extension, "_build_loops", lambda *a: pytest.fail("must not compile"))
    assert extension.recurrence_loops() is None
    assert extension.loops_unavailable_reason() == "NNRNN_CPP=0"


def _whole_library() -> bytes:
    """A real compiled library (torch's own extension module) to cut short."""
    return Path(torch._C.__file__).read_bytes()


@pytest.mark.parametrize("cut", ["empty", "header", "half", "section table", "not elf"])
def test_a_damaged_cached_library_is_compiled_again_never_loaded(cut, fresh_loops, monkeypatch, capsys):
    """A library cut short (a full disk, a killed copy) would be mapped by the loader and kill the process with a
    Bus error on the first page past its end; an empty one would fail to load for good, every run then falling
    back to the Python loops with a line saying to install g++.  Either is compiled again, with one line saying so."""
    whole = _whole_library()
    section_table = int.from_bytes(whole[40:48], "little")  # e_shoff: the section headers, near the file's end
    damaged = {"empty": b"", "header": whole[:40], "half": whole[:len(whole) // 2],
               "section table": whole[:section_table + 1],
               "not elf": b"#!/bin/sh\n" + whole[10:]}[cut]
    target = fresh_loops / (extension._loops_name() + ".so")
    target.write_bytes(damaged)
    monkeypatch.setattr(extension, "_import_from", lambda *a: pytest.fail("a damaged library must not be loaded"))
    built = []
    monkeypatch.setattr(extension, "_build_loops", lambda name, where: built.append(where) or "rebuilt")
    assert extension.recurrence_loops() == "rebuilt"
    assert built == [target] and not target.exists()  # removed, for the build to rename a whole one into place
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"cached compiled loops {target} are damaged" in lines[0], lines
    assert "compiling them again" in lines[0] and "g++" not in lines[0]


def test_a_whole_cached_library_is_loaded_without_compiling(fresh_loops, monkeypatch):
    target = fresh_loops / (extension._loops_name() + ".so")
    target.write_bytes(_whole_library())
    monkeypatch.setattr(extension, "_import_from", lambda path, name: ("loaded", path))
    monkeypatch.setattr(extension, "_build_loops", lambda *a: pytest.fail("must not compile"))
    assert extension.recurrence_loops() == ("loaded", target)


@pytest.mark.subprocess
def test_a_build_leaves_only_the_library_and_a_second_process_reuses_it(tmp_path):
    """Compiles once into a private folder and renames the library into place; a new process then
    loads it without compiling.  The build is of a one-function extension (2 s, not the loops' 20 s): what is
    checked is where the build goes and that it is reused; that the real loops build is test_fused.py's
    compiled_loops_or_skip, which fails where a compiler exists and they do not build."""
    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no C++ compiler here")
    source = tmp_path / "source" / "ping.cpp"  # a folder of its own: the extensions folder must hold only the .so
    source.parent.mkdir()
    source.write_text("#include <pybind11/pybind11.h>\n"
                      "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"ping\", [] { return 1; }); }\n")
    built = tmp_path / "built"
    env = dict(os.environ, NNRNN_EXTENSIONS_DIR=str(built))
    script = ("from pathlib import Path; from nnrnn.kernels import extension; "
              f"extension.LOOPS_SOURCES = (Path({str(source)!r}),); assert extension.recurrence_loops().ping() == 1")
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "compiling the C++ recurrence loops" in first.stderr
    assert [p.suffix for p in built.iterdir()] == [".so"]  # no build folder, no lock left behind
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "compiling" not in second.stderr


# ----------------------------------------------------------------------------- allocator


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")
def test_keep_freed_memory_keeps_a_freed_tensor_for_reuse():
    """After keep_freed_memory(), a freed 64 MB tensor stays with the process (the next one of that size
    reuses its pages instead of faulting in fresh ones); glibc's default hands it back at once."""
    assert memory.keep_freed_memory()
    big = torch.ones(1 << 24)  # 64 MB, written
    before = _rss_bytes()
    del big
    assert before - _rss_bytes() < 8 << 20


def test_the_command_keeps_freed_memory_unless_told_not(monkeypatch, capsys):
    """The ``nnrnn`` command (nnrnn_cli.command.entry) sets the allocator for its process; main, which a
    program may call in its own process, does not."""
    from nnrnn_cli import command as nnrnn_cli
    from nnrnn.commands import kernels as command
    calls = []
    monkeypatch.setattr(memory, "keep_freed_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(command, "main", lambda args: 0)  # a command that imports torch, doing nothing here
    monkeypatch.delenv("NNRNN_KEEP_FREED_MEMORY", raising=False)
    assert nnrnn_cli.main(["kernels"]) == 0 and calls == []
    for setting, kept in (("", 1), ("1", 1), ("0", 0), ("false", 0), ("Off", 0), ("no", 0)):
        monkeypatch.setenv("NNRNN_KEEP_FREED_MEMORY", setting)
        calls.clear()
        with pytest.raises(SystemExit) as exit_:
            nnrnn_cli.entry(["kernels"])
        assert exit_.value.code == 0 and len(calls) == kept, setting
