"""``nnrnn doctor``: checks that nnrnn trains correctly on a device, and times it there, in one table.

For every model and task, at a small size:

* **parity**: K training updates on the device (float32) and the same K updates in float64 on the CPU
  from the same initial parameters and batches, through the trainer's own update
  (:class:`~nnrnn.training.step.TrainStep`); the losses of every update and the change of every parameter
  must agree within :data:`PARITY_RTOL`, each first gradient also within :data:`GRADIENT_NOISE_MARGIN` times
  its float64 sensitivity to float32 rounding.  On the CPU this compares float32 with float64 on the CPU,
  which runs different loops (the compiled or oneDNN loops against the ``aten`` ones) and so still finds bugs.
* **resume**: N updates of the real :func:`nnrnn.training.train.train` in one go, against N/2 and then
  ``--resume`` to N; the final parameters must be equal (to :data:`RESUME_RTOL` on CUDA, where some
  kernels need not add in a fixed order).  An evaluation that is not finite is tolerated when every update
  was (:func:`_train_to_checkpoint`).
* **autocast**: one update under ``torch.autocast(device, bfloat16)`` (docs/layers.md claims it on cpu and
  cuda): finite, and its loss within :data:`AUTOCAST_RTOL` of float32's.
* **compile**: the losses of K updates of ``torch.compile(network)`` against eager, within
  :data:`COMPILE_RTOL`.  With ``--quick``, nnRNN only and with ``backend="eager"`` (Dynamo's tracing of
  nnrnn's custom ops without inductor's code generation, which takes tens of seconds per model on a CPU).
* **cuda graph**: the trainer's update replayed from CUDA graphs against the same updates made eagerly, within
  :data:`CUDA_GRAPH_RTOL` (CUDA only; "skipped (runs eagerly: ...)" for an update that reads the host).
* **ddp**: two processes of ``nnrnn train`` launched as torchrun launches them (NCCL on two CUDA
  devices, gloo on the CPU) against one process on the whole batch: the same parameters to
  :data:`DDP_RTOL`.  Skipped with one CUDA device, and with ``--quick``.
* **update time**: one training update (forward, backward, RMSprop step) at the paper's sizes,
  (784, 128, 512, 1) psMNIST and (150, 128, 1024, 200) PTB, as a ratio to torch.nn.RNN(relu) (cuDNN on a
  GPU) and to torch.nn.LSTM measured in the same process, alternating, median of several rounds; and the
  peak memory of one update (CUDA only); on CUDA also the trainer's update replayed from its CUDA graphs
  against the same update made eagerly.  ``--quick`` times a tiny size instead, to exercise the code.

psMNIST and PTB parity, autocast and compile use synthetic batches of those tasks' shapes (pixels in
[0, 1], 50 character ids carried across segments) with the tasks' own losses, so they need no data;
their resume rows run the real tasks and read "skipped (no data: ...)" where the data is not found.

The exit status is 1 if any check failed, else 0.
"""
