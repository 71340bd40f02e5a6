"""A stand-in for the official ALBERT code (google-research/albert): a folder named ``albert`` whose
``create_pretraining_data.py`` imports its own ``tokenization`` the official way, ``from albert import tokenization``.

The stand-in's script writes, to its ``--output_file``, the file its ``tokenization`` module was imported from, so a
test sees which ``albert`` package it got.
"""
import os

SCRIPT = '''"""Stand-in for the official create_pretraining_data.py: its import line, then where it came from."""
import sys

from albert import tokenization

output = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--output_file="))
with open(output, "w") as f:
    f.write(tokenization.__file__)
'''


def make_official_albert(parent: str) -> str:
    """``parent/albert`` holding ``__init__.py``, ``tokenization.py`` and ``create_pretraining_data.py``."""
    checkout = os.path.join(parent, "albert")
    os.makedirs(checkout)
    files = {"__init__.py": "", "tokenization.py": 'OFFICIAL = True\n\n\nclass FullTokenizer:\n    pass\n',
             "create_pretraining_data.py": SCRIPT}
    for name, text in files.items():
        with open(os.path.join(checkout, name), "w") as f:
            f.write(text)
    return checkout
