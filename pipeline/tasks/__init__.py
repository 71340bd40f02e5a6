"""What runs inside the compiled spec's containers besides the components: its lightweight tasks (``snapshot_task``:
the data spans and fingerprints, ``init_from_task``: the model to continue from, ``gate_baseline_task``: the data
gate's baseline), the task launcher (``task_launcher``) and the image's own check (``install_check``)."""
