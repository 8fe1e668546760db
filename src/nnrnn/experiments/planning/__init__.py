"""Planning and execution: what a grid trains, where, and what it will cost.

Layered bottom to top, each module importing only from those listed before it (and from :mod:`..judging`):

* :mod:`.sweep`: Optuna searches over training options;
* :mod:`.grid`: a grid's planning: :class:`~.grid.PlannedRun` (one per run), :class:`~.grid.Grid` (its folder and
  the name of every file in it, its scale, its planned runs);
* :mod:`.placement`: which device each run of a grid trains on, on one machine (:class:`~.placement.Slots`);
* :mod:`.cluster`: a grid's runs and searches as tasks of a Ray cluster (optional: ``nnrnn[ray]``);
* :mod:`.cost`: a grid's cost before it starts, from update times measured at each run's shape."""
