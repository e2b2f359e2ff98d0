"""The ``wasp`` command line: serve | validate | compile | schema | certs."""
