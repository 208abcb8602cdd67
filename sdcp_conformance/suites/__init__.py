"""Conformance suites: case declarations keyed to the draft's sentences, one package per role."""
