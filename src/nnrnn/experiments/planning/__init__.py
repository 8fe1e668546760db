"""Planning and execution: what a grid trains, where, and what it will cost.

Layered bottom to top, each module importing only from those listed before it (and from :mod:`..judging`):

* :mod:`.searching`: what an Optuna search over training options draws and how it judges a trial (the
  supplement's space, a grid's equal terms);
* :mod:`.storage`: where a search's study is kept, and finding a study in it;
* :mod:`.objective`: one trial of a search, an ordinary training run;
* :mod:`.summary`: a study's best trials as a table;
* :mod:`.sweep`: a search's life (:func:`~.sweep.run_sweep`: its study, its first trial, its trials);
* :mod:`.declaration`: a grid's declaration by types (:class:`~.declaration.Scale`, its settings, variants and
  search), checked when a grid's module is imported;
* :mod:`.grid`: a grid's planning: :class:`~.grid.PlannedRun` (one per run), :class:`~.grid.Grid` (its folder and
  the name of every file in it, its scale, its planned runs);
* :mod:`.joint`: a joint search's trials, every arm of a trial at the same drawn options, and its pick;
* :mod:`.placement`: which device each run of a grid trains on, on one machine (:class:`~.placement.Slots`);
* :mod:`.cluster`: a grid's runs and searches as tasks of a Ray cluster (optional: ``nnrnn[ray]``);
* :mod:`.cost`: a grid's cost before it starts, from update times measured at each run's shape."""
