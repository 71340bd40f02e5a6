"""Custom TFX components of albert-tfx and the pure cores they wire in.

Subpackages ``text``, ``datagen`` and ``evaluation`` are plain Python/NumPy (TF only where a
tensor is the point) and import neither Beam nor TFX; the ``*_component`` modules are the thin
TFX/Beam shells around them.
"""
import os as _os

# One Keras for the whole project: tf_keras (Keras 2). tensorflow-transform forces it, and it
# must be chosen before TensorFlow is first imported.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
