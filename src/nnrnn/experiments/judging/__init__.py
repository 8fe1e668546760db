"""Judging and its words: a claim's verdict from numbers, and the verdict in the claim's own words.

Layered bottom to top, each module importing only from those listed before it:

* :mod:`.rules`: the words of a verdict and every threshold and window a claim is judged by;
* :mod:`.statistics`: a result over seeds (:class:`~.statistics.Stat`) and the two-standard-error rule;
* :mod:`.paper`: the paper's published numbers, and its groups of models read from the model classes;
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
