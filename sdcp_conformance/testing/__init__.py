"""Tools for testing the harness and the project's servers: a misbehaving SDCP server, a raw HTTP/2 client."""
