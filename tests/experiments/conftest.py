"""The experiments' tests: a grid's cost is estimated from planted times, not measured (measuring a shape trains
it; tests/experiments/test_cost.py measures once, on its own), and the estimates' cache is the test's own."""
import pytest


@pytest.fixture(autouse=True)
def planted_costs(monkeypatch, tmp_path_factory):
    from nnrnn.experiments import cost
    path = tmp_path_factory.mktemp("costs") / "update-times.json"
    monkeypatch.setattr(cost, "cache_path", lambda: path)
    monkeypatch.setattr(cost, "measure", lambda config: cost.Times(0.1, 0.01, 0.001, 0.01))
    monkeypatch.setattr(cost, "measure_floor", lambda config: 1.0)
    monkeypatch.setattr(cost, "measure_process", lambda: 1.0)
    return path
