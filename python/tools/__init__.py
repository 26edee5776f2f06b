"""Developer tools for the pipeline, apart from the package users install:
the random training steps and their property checker (`random_steps`), and
the seeded fuzz driver of offload-opt (`fuzz_steps`). Each runs as
`python -m tools.NAME` from python/ (or with PYTHONPATH=python).
"""
