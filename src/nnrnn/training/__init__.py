"""Training: everything between a configuration and a trained run folder.

* :mod:`.config`: the configuration as data (defaults, presets, one ``validate``), what a run's options mean;
* :mod:`.network`: building the task and the network a configuration describes, loading a trained one;
* :mod:`.train`: the training loop; :mod:`.run_state`: the run under way and its state (``last.pt``);
  :mod:`.evaluation`: scoring a network on a split, during training and of a checkpoint; :mod:`.interrupt`:
  SIGINT and SIGTERM as a flag the loop checks;
* :mod:`.step`: one training update (shared with ``nnrnn doctor``) and its replay from CUDA graphs;
* :mod:`.runfolder`: a run folder's file names and claiming one; :mod:`.checkpoint`: atomic checkpoint
  files; :mod:`.runlock`: one process per run folder;
* :mod:`.runlog`: metrics, TensorBoard and curves; :mod:`.distributed`: several processes (``torchrun``).

Models and tasks (:mod:`nnrnn.models`, :mod:`nnrnn.tasks`) know nothing of this layer; the experiments
(:mod:`nnrnn.experiments`) and the command line sit above it."""
