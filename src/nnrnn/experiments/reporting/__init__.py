"""What every report shares; it imports no particular grid (a grid's own sections live in its module of
:mod:`..grids`).

Layered bottom to top, each module importing only from those listed before it (and from :mod:`..judging` and
:mod:`..planning`):

* :mod:`.collect`: what the reports read from run folders (each run's resolved configuration among them);
* :mod:`.signal`: whether a search's best trial left its task's memoryless baseline (a search that found nothing);
* :mod:`.tuning`: how every model of a tuned grid was tuned (the section every tuned grid's report shows);
* :mod:`.picks`: where a tuned grid's picks fell in their ranges, each model's optimizer and queued published
  settings;
* :mod:`.figures`, :mod:`.sections`: the reports' figures, the shape of a report (:class:`~.sections.Report`) and
  the sections several reports share;
* :mod:`.compact`: a report's compact data (``data.json``), written and read back;
* :mod:`.report`: the report skeleton every grid shares (the introduction, the data section, the grid's sections,
  the notes)."""
