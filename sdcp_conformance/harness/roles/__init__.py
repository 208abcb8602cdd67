"""The counterpart roles the harness plays around an implementation under test.

Each module holds one played role (or one part of it), named for what it
holds; every played role checks what it receives against the requirement
table, so an IUT's malformed message is found the same way whichever suite
is running (ARCHITECTURE.md, "Roles on both sides").
"""
