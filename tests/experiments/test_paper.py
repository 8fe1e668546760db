"""nnrnn.experiments.judging.paper: the paper's groups of models come from the model classes, and a class's flags
agree with
the training options it accepts."""
import pytest

from nnrnn.experiments.judging import paper
from nnrnn.experiments.reproduce import expected_cost
from nnrnn.models import MODELS
from tests.experiments import synthetic


def test_the_papers_groups_are_read_from_the_model_classes():
    assert paper.ORTHOGONAL == ("exprnn", "eurnn", "rnn-orth")
    assert paper.NON_GATED == ("rnn", "rnn-orth", "eurnn", "exprnn", "nnrnn")


@pytest.mark.parametrize("name", list(MODELS))
def test_a_models_flags_agree_with_the_training_options_it_takes(name):
    cls = MODELS[name]
    assert cls.ORTHOGONAL_FACTOR == ("lr_orth" in cls.TRAIN_OPTIONS)
    assert cls.SCHUR_FORM == ("delta" in cls.TRAIN_OPTIONS)
    # GATES: N × N recurrent blocks (0 for an elementwise recurrence, such as the LRU's and minGRU's)
    assert isinstance(cls.GATES, int) and cls.GATES >= 0 and isinstance(cls.ORTHOGONAL, bool)


def test_a_runs_rough_cost_comes_from_its_task_and_model_classes():
    def planned(task, model, **options):
        return synthetic.planned(task=task, model=model, hidden=64, options={"batch_size": 1, **options})
    # copy: T + 20 steps; an LSTM's four gates cost four N×N products
    assert expected_cost(planned("copy", "lstm", T=80, steps=10)) == 10 * 100 * (4 * 64 ** 2 + 64 ** 2)
    assert expected_cost(planned("psmnist", "rnn", epochs=2)) == 2 * 125 * 784 * 2 * 64 ** 2
    assert expected_cost(planned("ptb", "gru", bptt=110, epochs=1)) == pytest.approx(100 * 110 * (3 + 1) * 64 ** 2)
