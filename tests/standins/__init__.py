"""The project's own test instruments, kept out of the wheel: implementations the harness did not write.

* ``standin_node``, ``standin_node_router``, ``standin_node_drafter``: a verifier, a router and a drafter in
  JavaScript (the folders of the same names, with their npm lockfiles, and ``node_common``, the modules the three
  share), started by their Python launchers (``python -m tests.standins.standin_node …``, from the checkout's
  root); ``node_packages`` installs each, with ``node_common`` and its pinned npm packages, into a cache folder on
  first use.
* ``standin_verifier``: the fast Python stand-in verifier (the reference's session machine on the bigram closed
  form) that the benchmarks drive.
* ``planted``: the one-line bugs planted in copies of the Node.js stand-ins, by role; ``mutants`` certifies each
  (``python -m tests.standins.mutants --role verifier|router|drafter|all``).

Tests import them as ``tests.standins.…`` (pytest puts the checkout's root on ``sys.path``, ``pythonpath`` in
``pyproject.toml``); child processes run them with ``python -m`` from the root (``tests/conftest.py`` puts it on
``PYTHONPATH`` for every child a test starts).
"""
