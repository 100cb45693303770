"""Benchmarks: each prints its figures as ratios against a reference measured in the same run.

Run each as a module from the project root, e.g. ``.venv/bin/python -m bench.store_restore --quick``
(``make bench`` runs them all); what they share is in :mod:`bench.common`.
"""
