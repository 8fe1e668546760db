"""What a model class says about itself, stated once: :class:`Traits`, the defaults every root model class
inherits (:class:`~nnrnn.models.base.RecurrentModel`, :class:`~nnrnn.models.cells.CellModel`, the GRU, the
LSTM and the complex nnRNN), each of which states only where it differs."""
from __future__ import annotations


class Traits:
    """A model class's traits, read off the class (never an instance) by the training configuration
    (:mod:`nnrnn.training.config`), the read-out's width (:func:`nnrnn.models.parameter_count`) and the
    experiments (:mod:`nnrnn.experiments`).  The defaults are a plain, non-gated, real model with no option of
    its own."""

    # The options of a training configuration this model's constructor takes (nnrnn.training.config.model_options),
    # and the orthogonal initialisation schemes its ``init`` accepts (empty: it has no ``init``).
    CONFIG_OPTIONS: tuple[str, ...] = ()
    INITS: tuple[str, ...] = ()
    # The training options that act on this model beyond its constructor's (nnrnn.training.config.inapplicable
    # refuses the others when given explicitly): lr_orth needs an orthogonal factor, delta and t_decay a Schur form.
    TRAIN_OPTIONS: tuple[str, ...] = ()
    # The nonlinearities its ``nonlinearity`` takes where they are fewer than the common four (None: all of them,
    # or it has no such option).
    NONLINEARITIES: tuple | None = None
    # Whether it is one of the paper's "orthogonal RNNs" (its recurrent matrix orthogonal or unitary, at least at
    # its start), its gate count (1: not gated; 0: an elementwise recurrence; a gated model's recurrent matrix is
    # that many N×N blocks), whether it trains an orthogonal factor under its own learning rate (lr_orth) and
    # whether it has a Schur form's γ and T (delta, t_decay).
    ORTHOGONAL: bool = False
    GATES: int = 1
    ORTHOGONAL_FACTOR: bool = False
    SCHUR_FORM: bool = False
    # The model's own options a hyperparameter search tunes beside the learning rates
    # (nnrnn.experiments.planning.searching):
    # name -> ("log", low, high), a log-uniform range, or ("choice", values).
    SEARCHED: dict[str, tuple] = {}
    # The own options a grid's search tunes beside the learning rate, every model at most the same number
    # (nnrnn.experiments.planning.searching.equal_space, OWN_OPTIONS): names of SEARCHED or of the supplement's options.
    TUNED_OPTIONS: tuple[str, ...] = ()
    # The optimizer its paper trains it with ("rmsprop" or "adam"; None: its paper names none we follow, and it
    # trains with its preset's or the task's). nnrnn has Adam and RMSprop, so the LRU's AdamW is Adam here. A grid
    # setting with ``paper_optimizer`` trains it so, over the task's procedure (docs/design.md).
    PAPER_OPTIMIZER: str | None = None
    # The real features a read-out sees per hidden unit (2 for a complex state: [Re h, Im h]).
    REAL_FEATURES_PER_UNIT: int = 1
    # The stacked layers its paper trains (a grid with ``paper_depth`` runs it so deep, at the grid's parameter
    # count; docs/design.md gives each paper's setting).
    DEPTH: int = 1
    # Whether its recurrent matrix is complex (the complex nnRNN's V = P (Λ + T) Pᴴ): the analyses of a real matrix
    # (nnrnn analyze) refuse it, and the reports' learned structure reads its complex Schur factors
    # (nnrnn.experiments.reporting.collect.structure_of).
    COMPLEX_RECURRENCE: bool = False
    # Its published figures (nnrnn.models.published.Published: task, measure, value, the scale it was measured at,
    # source) on the protocols the grids run, which a report sets beside its own (nnrnn.experiments.grids.modern);
    # a class's own, never inherited (tests/models/test_models.py).
    PUBLISHED: tuple = ()
    # Whether its Schur form's T is a plain parameter of its own rather than a Parametrization (the nnLRU's packed T):
    # then the layer gives its penalty itself, ``regularization(delta, t_decay)`` (nnrnn.models.regularization).
    OWN_PENALTY: bool = False
    # Whether nnrnn analyze analyses it by its exact linear theory (nnrnn.analysis.linear.analyze_nnlru: eigenvalues,
    # |T| and the exact Fisher memory curve) instead of the Schur-form and gradient figures of a nonlinear model.
    LINEAR_ANALYSIS: bool = False
    # What a report calls it and how its figures draw it (nnrnn.experiments.judging.labels), which every model class
    # states itself (no default: tests/models/test_models.py checks each has its own): a display name, and a colour
    # with a matplotlib line style, no two models sharing either, so that two curves can be told apart by either
    # alone (gray is left to the reference lines).
    DISPLAY_NAME: str
    LINE_STYLE: tuple[str, object]
