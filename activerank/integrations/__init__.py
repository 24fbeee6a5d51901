"""activerank inside other tools: :mod:`activerank.integrations.lightgbm` (a training callback).

Each integration imports its tool lazily, on first use, so importing this package needs none of them.
"""
