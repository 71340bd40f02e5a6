"""``albert-pipeline rehearse``: every task of a compiled spec run on this machine the way the backends start them
(``rehearsal``), with a local stand-in for the pipeline root's store (``rehearsal_store``)."""
