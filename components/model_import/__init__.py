"""The given model's node (``ModelImport``, ``mode=benchmark``): a pushed version, a converted release or a Trainer's
output registered as the model the benchmark nodes fine-tune, with the digest of its files checked. Component:
``model_import_component``; its one setting is ``train.init_from`` (resolved by ``pipeline.settings.resolve``)."""
