"""The project's benchmarks, apart from the package users install.

Each module is a script that also runs as `python -m benchmarks.NAME` from
python/ (or with PYTHONPATH=python); `benchmarks.peers` is the comparison
with the other ways to train past GPU memory
(`python -m benchmarks.peers --help`).
"""
