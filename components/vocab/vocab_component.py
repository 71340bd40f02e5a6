"""The vocabulary node's TFX component, ``VocabGen``: a shell over :mod:`components.vocab.vocab_lib`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import hashlib
import logging
import os
import tempfile

from tfx.dsl.component.experimental.annotations import InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component

from components import artifacts
from components.file_io import copy_tree, publish
from components.node_shell import staged
from components.text.tokenizers import vocab_file_name
from components.vocab import vocab_lib
from components.vocab.vocab_config import VocabConfig
from components.vocab.vocab_lib import vocab_folder_spec

_LOG = logging.getLogger(__name__)


@component
def VocabGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: OutputArtifact[artifacts.SentencePieceModel],
    config: Parameter[str],
    seed: Parameter[int],
) -> None:
    """Train SentencePiece with ALBERT's recipe on the documents, or import ``vocab.import_model``.

    Records on the artifact what downstream nodes need: ``vocab_size``, ``do_lower_case`` (the
    tokenizer setting that goes with this model) and the model file's ``sha256``.
    """
    cfg = VocabConfig.from_json(config, "vocab.")
    with tempfile.TemporaryDirectory() as tmp:
        size, origin = vocab_lib.build_vocab(cfg, seed, documents.uri, tmp)
        spec = vocab_folder_spec(tmp, cfg.do_lower_case)
        with open(os.path.join(tmp, vocab_file_name(spec)), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with staged(vocab.uri) as staging:
            copy_tree(tmp, staging)
            publish(staging, vocab.uri)
    vocab.set_int_custom_property("vocab_size", size)
    vocab.set_int_custom_property("do_lower_case", int(cfg.do_lower_case))
    vocab.set_string_custom_property("origin", origin)
    vocab.set_string_custom_property("sha256", digest)
    if spec.needs_file:  # English's SentencePiece vocabularies keep the properties they always had
        vocab.set_string_custom_property("kind", spec.kind)
