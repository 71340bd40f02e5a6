"""The vocabulary node (``VocabGen``): a SentencePiece model with ALBERT's recipe or a WordPiece ``vocab.txt``,
trained on a seeded sample of the documents' sentences, or an imported one checked.

Pure core: ``vocab_lib`` (no Beam: the sample is bounded). Component: ``vocab_component`` (``VocabGen``). Settings:
``vocab_config`` (``vocab.*``). Tokenizers every node shares: ``components.text``.
"""
