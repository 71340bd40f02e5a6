"""components/evaluation/finetune.py: checkpoints and the median run follow the official selection metric.

A tiny random classifier is really trained; the evaluation function reports fixed numbers per evaluation
(the headline and the selection score disagree on purpose), so the test pins which weights are kept.
"""
import numpy as np
import pytest

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation.finetune import fine_tune, median_run, predict  # noqa: E402
from components.evaluation.heads import ClassifierModel, classification_loss  # noqa: E402
from pipeline.settings.configs import FinetuneHParams  # noqa: E402
from trainer.modeling_albert import AlbertConfig, AlbertModel  # noqa: E402


def _arrays(n=32, length=12, seed=0):
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(5, 300, (n, length)).astype(np.int32),
            "input_mask": np.ones((n, length), np.int32), "segment_ids": np.zeros((n, length), np.int32),
            "label_ids": rng.integers(0, 2, n).astype(np.int32)}


def test_best_checkpoint_is_chosen_by_selection_score():
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    encoder = AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=300))
    model = ClassifierModel(encoder, 2, 0.1, seed=0)
    train = _arrays()
    model({k: v[:1] for k, v in train.items()}, training=False)
    # (headline, selection) at steps 2, 4, 6: the headline would pick step 2, the official metric step 4.
    scripted = [(90.0, 10.0), (10.0, 90.0), (50.0, 50.0)]
    seen = []

    def evaluate(m):
        score, selection = scripted[len(seen)]
        seen.append(predict(m, train)["logits"])
        return {"score": score, "selection_score": selection}, {"eval": len(seen)}

    hp = FinetuneHParams(1e-3, 8, 0.0, 0.1, train_steps=6, warmup_steps=1, max_seq_length=12)
    res = fine_tune(model, classification_loss, train, hp, seed=0, evaluate=evaluate, selection="best", eval_every=2)
    assert [h["step"] for h in res["history"]] == [2, 4, 6]
    assert res["step"] == 4 and res["payload"] == {"eval": 2} and res["metrics"]["score"] == 10.0
    # The weights of step 4 are back in the model (not those of the last step).
    np.testing.assert_allclose(predict(model, train)["logits"], seen[1], rtol=1e-5, atol=1e-6)
    assert np.abs(seen[2] - seen[1]).max() > 1e-6

    last = fine_tune(model, classification_loss, train, hp, seed=0,
                     evaluate=lambda m: ({"score": 1.0, "selection_score": 2.0}, None), selection="last")
    assert last["step"] == 6 and [h["step"] for h in last["history"]] == [6]


def test_models_of_one_architecture_share_one_inference_trace():
    """Fine-tuning builds a model per run; each one's predictions run through the one traced function of its
    architecture (its twin, holding that model's weights), bit for bit what the model's own traced call gives."""
    import tf_keras

    from components.evaluation import finetune as ft

    train = _arrays()
    feats = {k: train[k] for k in ClassifierModel.input_keys}
    models = []
    for seed, labels in ((1, 2), (2, 2), (3, 3)):
        tf_keras.utils.set_random_seed(seed)
        model = ClassifierModel(AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=300)), labels, 0.1, seed=seed)
        model(feats, training=False)
        own = tf.function(lambda x, m=model: m(x, training=False), autograph=False)(feats)["logits"].numpy()
        np.testing.assert_array_equal(predict(model, train, batch_size=64, dynamic=False)["logits"], own)
        models.append(model)
    twins = [ft._TWINS[m.twin_key()] for m in models]
    assert twins[0] is twins[1] and twins[2] is not twins[0]  # same shape, one twin; three labels, another
    assert [fn.experimental_get_tracing_count() for t in twins[1:] for fn in ft._PREDICT_FNS[t].values()] == [1, 1]
    assert not any(m in ft._PREDICT_FNS for m in models)  # no model traced its own


def test_median_run_uses_the_selection_score():
    runs = [{"metrics": {"score": s, "selection_score": sel}} for s, sel in
            [(90.0, 20.0), (10.0, 30.0), (50.0, 10.0), (70.0, float("nan")), (30.0, 40.0)]]
    # selection scores 20, 30, 10, NaN (last), 40 -> sorted 10, 20, 30, 40, NaN -> median 30 (run 1)
    assert median_run(runs) == 1
    assert median_run(runs[:2]) == 0  # even count: the lower middle
