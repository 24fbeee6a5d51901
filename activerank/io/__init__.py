"""Reading and writing the files rankers are evaluated on: LETOR/SVMlight
(:mod:`.letor`) and TREC run / qrels files (:mod:`.trec`)."""
