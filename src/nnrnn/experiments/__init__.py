"""Experiments: grids of training runs, searches and the reports that judge the paper's claims.

Layered bottom to top, each module importing only from those listed before it:

* :mod:`.rules`: the words of a verdict and every threshold and window a claim is judged by;
* :mod:`.statistics`: a result over seeds (:class:`~.statistics.Stat`) and the two-standard-error rule;
* :mod:`.paper`: the paper's published numbers, and its groups of models read from the model classes;
* :mod:`.words`: names and results as sentences show them;
* :mod:`.theory_verdicts`, :mod:`.verdicts`: one function per claim, numbers in, a judgement out (the verdict and
  the comparisons behind it; no files);
* :mod:`.sentences`: judgements in English, as the reports' claim rows;
* :mod:`.sweep`: Optuna searches over training options (nothing else of this package);
* :mod:`.grid`: a grid's planning: :class:`~.grid.PlannedRun` (one per run), :class:`~.grid.Grid` (its folder and
  the name of every file in it, its scale, its planned runs);
* :mod:`.placement`: which device each run of a grid trains on, on one machine (:class:`~.placement.Slots`);
* :mod:`.cluster`: a grid's runs and searches as tasks of a Ray cluster (optional: ``nnrnn[ray]``);
* :mod:`.cost`: a grid's cost before it starts, from update times measured at each run's shape;
* :mod:`.collect`: what the reports read from run folders;
* :mod:`.picks`: where a tuned grid's picks fell in their ranges, each model's optimizer and queued published
  settings;
* :mod:`.figures`, :mod:`.sections`: the reports' figures, the shape of a report (:class:`~.sections.Report`) and
  the sections several reports share;
* :mod:`.beyond`, :mod:`.modern`, :mod:`.memory`, :mod:`.reproduction`: each report's own sections (the non-normal
  family, today's long-memory RNNs, the memory horizon on a ladder of copy delays, the paper's claims judged);
* :mod:`.grids`: every grid, one module each (its scale and its report), found by :data:`.grids.SCALES`;
* :mod:`.compact`: a report's compact data (``data.json``), written and read back;
* :mod:`.report`: the report skeleton every grid shares, and a report written again from its compact data;
* :mod:`.reproduce`: running a grid (its cost first; a process pool over the devices, or a Ray cluster; tuning,
  the tuned preset)."""
