"""The DAG in the cloud: the compiled Kubeflow Pipelines v2 / Vertex AI spec (``kubeflow_v2_runner``, read back by
``spec``), submit and schedule (``submit``), named environments (``environments``, their commands in ``cli_env``,
``deploy`` between the two). The Trainer as a Vertex AI Training job is the Trainer node's own:
``trainer.trainer_component``."""
