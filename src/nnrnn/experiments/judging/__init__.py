"""Judging and its words: a claim's verdict from numbers, and the verdict in the claim's own words.

Layered bottom to top, each module importing only from those listed before it:

* :mod:`.rules`: the words of a verdict and every threshold and window a claim is judged by;
* :mod:`.family`: a report's family of comparisons, controlled together by Benjamini–Hochberg (rule FAMILY): the
  level each comparison passes at, and the comparisons each claim row rests on;
* :mod:`.significance`: the tests each measure is compared by, from scipy.stats (Welch, permutation and bootstrap,
  Fisher's exact, Kaplan–Meier and log-rank on censored times, Benjamini–Hochberg);
* :mod:`.statistics`: a result over seeds (:class:`~.statistics.Stat`, with the seeds' values) and the rule that says
  when two differ (rule TEST: the Welch test now, two standard errors for a grid started before it; at the level of
  the report's family, rule FAMILY);
* :mod:`.paper`: the paper's published numbers, and its groups of models read from the model classes;
* :mod:`.labels`: what a report calls each label and how its figures draw it (a model's from its class, a
  variant's as the grid that defines it declares it);
* :mod:`.words`: names and results as sentences show them;
* :mod:`.judgement`: what every judgement of an experiment claim shares (:class:`~.judgement.Judgement`, the
  grading of a verdict from its parts);
* :mod:`.theory_verdicts`, :mod:`.task_verdicts`, :mod:`.gamma_verdicts`, :mod:`.structure_verdicts`: one function
  per claim, numbers in, a judgement out (the verdict and the comparisons behind it; no files), by claim family (the
  theory; copy, psMNIST, PTB and the gap to expRNN; γ and the gradients; what nnRNN learned);
* :mod:`.comparisons`: one comparison by the rule in words (:func:`~.comparisons.compare`,
  :func:`~.comparisons.relation`);
* :mod:`.task_sentences`, :mod:`.gamma_sentences`, :mod:`.structure_sentences`, :mod:`.theory_sentences`: judgements
  in English, as the reports' claim rows, by claim family (copy, psMNIST, PTB and the gap to expRNN; γ and the
  gradients; what nnRNN learned; the theory)."""
