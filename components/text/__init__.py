"""Pure text processing: normalisation, tokenization, sentence splitting, Wikipedia and book readers."""
