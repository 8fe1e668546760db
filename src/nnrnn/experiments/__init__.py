"""Experiments: grids of training runs, searches and the reports that judge the paper's claims.

Layered bottom to top, each importing only those below it:

* :mod:`.verdicts`: one function per claim, numbers in, a verdict out (no files, no torch);
* :mod:`.grid`: the scales as data and their planning (one entry per run, its folder);
* :mod:`.report`: the reports written from a grid's run folders;
* :mod:`.sweep`: Optuna searches over training options;
* :mod:`.reproduce`: running a grid (a process pool, tuning, the tuned preset) and its command line."""
