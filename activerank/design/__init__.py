"""Everything decided before a label is bought: what is estimated (targets),
what judging costs (:mod:`.costs`), how queries are sampled (methods,
:mod:`.sampling`)."""
