"""`python -m benchmarks.peers`: offload-mlir against the other ways of
training a model whose activations do not fit, side by side in one run
(see `python -m benchmarks.peers --help`)."""
