"""The DAG run on this machine: TFX's local runners (``local_runner``), the store's lock (``run_lock``), ``plan``
(which nodes would run, and why), the run's log files (``logs``) and the one way an MLMD store is opened
(``mlmd``)."""
