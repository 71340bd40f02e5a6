"""Serving a released model from raw text: ``albert-pipeline serve`` (an ASGI app speaking Vertex AI's
custom-container contract, ``serving_app.py``, with a micro-batcher, ``micro_batcher.py``), ``albert-pipeline
predict`` (``predict_cli.py``) and ``albert-pipeline deploy`` (Vertex AI Model Registry + endpoint,
``vertex_serving.py``). All of them call one loader, ``served_model.py``, so ``predict`` runs the graph the server
runs; ``serving_instances.py`` checks a request's instances against the loaded signature (no TensorFlow).
docs/serving.md is the user's guide.
"""
