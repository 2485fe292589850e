"""Benchmarks: ``make bench`` runs every ``tests/bench/bench_*.py`` module's ``main``.

Benchmarks print a table and write JSON under ``bench/results/``; they are not tests and
assert nothing about time.
"""
