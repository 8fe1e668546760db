"""Experiments: grids of training runs, searches and the reports that judge the paper's claims.

Layered bottom to top, each importing only those below it:

* :mod:`.statistics`: a result over seeds (:class:`~.statistics.Stat`) and the two-standard-error rule;
* :mod:`.rules`: the words of a verdict and every threshold and window a claim is judged by;
* :mod:`.paper`: the paper's published numbers, and its groups of models read from the model classes;
* :mod:`.words`: names and results as sentences show them;
* :mod:`.theory_verdicts`, :mod:`.verdicts`: one function per claim, numbers in, (verdict, evidence) rows out (no
  files);
* :mod:`.grid`: the scales as data and their planning (one entry per run, its folder);
* :mod:`.collect`: what the reports read from run folders;
* :mod:`.figures`, :mod:`.sections`: the reports' figures and shared markdown;
* :mod:`.beyond`, :mod:`.report`: the beyond report and the paper's report;
* :mod:`.sweep`: Optuna searches over training options;
* :mod:`.reproduce`: running a grid (a process pool, tuning, the tuned preset) and its command line."""
