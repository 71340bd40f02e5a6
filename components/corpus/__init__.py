"""The corpus node (``CorpusGen``): raw Wikipedia dumps, WikiExtractor output and book folders → clean documents.

Pure core: the readers (``wiki`` and ``wikitext`` for XML dumps, ``wikiextractor_output``, ``books``, and
``compression`` for every compressed form), plain Python with no Beam, TFX or TensorFlow. Beam shell:
``corpus_beam`` (read, split, deduplicate, write shards), which ``ingest_tool`` (``albert-pipeline ingest``) runs
without TFX. Component: ``corpus_component`` (``CorpusGen``). Settings: ``corpus_config`` (``corpus.*``). The
document format every node reads is shared: ``components.text.documents``.
"""
