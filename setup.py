"""setup.py: metadata lives in pyproject.toml; this file exists so Beam's ``--setup_file``
can build and ship the package to Dataflow workers."""
import setuptools

setuptools.setup()
