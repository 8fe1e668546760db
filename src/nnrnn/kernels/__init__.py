"""The kernels nnrnn's float32 recurrences and matrix products run on, and the policy that chooses among them.

Nothing is imported here: a caller names the module it uses (``from nnrnn.kernels import policy``)."""
