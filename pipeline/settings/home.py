"""Where the project's files that are not Python modules live: the bundled sample (``data/sample``) and the
environments file (``infra/environments.yaml``).

In a source checkout they sit beside the packages, and that is the default. An installed copy (the pipeline
image installs the wheel into a virtualenv, so the packages live in ``site-packages``) finds them through one
setting, ``ALBERT_TFX_HOME``: the image sets it to :data:`IMAGE_HOME`, where ``infra/Dockerfile`` copies them.
"""
import os

HOME_VAR = "ALBERT_TFX_HOME"
# The image's project folder (infra/Dockerfile: ENV ALBERT_TFX_HOME, COPY data/sample, infra/environments.yaml).
IMAGE_HOME = "/opt/albert-tfx"
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # pipeline/settings/home.py

PROJECT_HOME = os.environ.get(HOME_VAR) or CHECKOUT
