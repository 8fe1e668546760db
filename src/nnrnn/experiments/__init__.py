"""Experiments: grids of training runs, searches and the reports that judge the paper's claims.

A few rooms, one idea each, layered bottom to top: each imports only from those listed before it (and each room's
modules only from those before them in its own docstring), never from a room above (``tests/test_layers.py``):

* :mod:`.judging`: judging and its words: the rules and thresholds, statistics over seeds, the paper's published
  numbers, one function per claim (numbers in, a judgement out) and the claims in English;
* :mod:`.planning`: planning and execution: a grid's planned runs and folder, Optuna searches, where each run
  trains (one machine's devices, or a Ray cluster) and a grid's cost before it starts;
* :mod:`.reporting`: what every report shares: what a report reads from run folders, the figures, the shape of a
  report (:class:`~.reporting.sections.Report`, which declares a grid's hooks), the sections several reports share,
  the skeleton every report is written in, and its compact data (``data.json``); it knows no particular grid;
* :mod:`.grids`: every grid, one module each: its scale, its report and that report's own sections, found by
  :data:`.grids.SCALES`;
* :mod:`.reproduce`: running a grid (its cost first; a process pool over the devices, or a Ray cluster; tuning,
  the tuned preset), and its report written again from its compact data alone."""
