"""``python -m sdcp_conformance.cli``: the ``sdcp-conformance`` command."""

from sdcp_conformance.cli import main

main()
