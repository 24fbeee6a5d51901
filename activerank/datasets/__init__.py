"""Small LETOR samples shipped with activerank (see ``SOURCE.md`` in this folder).

Load them with :func:`activerank.io.letor.load_sample`.
"""
