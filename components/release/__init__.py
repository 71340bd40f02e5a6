"""The release: the blessing decision, the versioned push with its model card, and the Model Registry upload.

Pure parts (no TFX): :mod:`.blessing` (numbers in, decision out) and :mod:`.model_card` (facts in, text out). File
work: :mod:`.package` (what a version holds), :mod:`.versions` (the push protocol: whole versions, unique growing
numbers) and :mod:`.registry` (Vertex AI Model Registry). The TFX nodes ``Blesser`` and ``Pusher``
(:mod:`components.release.release_component`) are thin shells over these.
"""
