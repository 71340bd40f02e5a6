"""ALBERT model, losses, optimizers and the TFX Trainer `run_fn`.
"""
import os as _os

# One Keras for the whole project: tf_keras (Keras 2). tensorflow-transform forces it, and it
# must be chosen before TensorFlow is first imported.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
