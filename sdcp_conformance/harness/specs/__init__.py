"""One role spec per IUT role (:class:`~sdcp_conformance.harness.role_spec.RoleSpec`): the parties the harness plays
around an IUT of that role, the environment that plays them, the target and what ``pki init --iut ROLE`` prints.
``sdcp_conformance.harness.suites`` names each ``SPEC`` as a string, so naming a role imports none of them."""
