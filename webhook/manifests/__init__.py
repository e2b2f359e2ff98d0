"""Reading manifests: files found, YAML and JSON documents with their positions, ``--old`` paired.

What ``wasp validate`` and ``wasp compile`` read before any policy judges it: directories
walked (:mod:`.paths`), documents parsed with the line of every field (:mod:`.loader`, with
:mod:`.constructor` for YAML values and :mod:`.jsonpos` for JSON positions), and each file's
previous version found for ``--old`` (:mod:`.old_pairing`). It knows no policy, no verdict and
no wire: it imports only the vocabulary of field paths.
"""
