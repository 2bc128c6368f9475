"""CLIP backends: transformers' contrastive loss equals the written-out InfoNCE (DECISIONS 15),
the tiny CLIP memorises 64 pairs (spec test 6), open_clip skips here, bad input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from recap_datacomp.clip import HFCLIPBackend, embed, tiny_clip_config, to_pixels, train_clip
from recap_datacomp.metrics import retrieval_metrics
from recap_datacomp.synthetic import shapes_corpus, vocabulary
from recap_datacomp.tiny import WordTokenizer


@pytest.fixture(scope="module")
def setup():
    # smaller than the reproduce's CLIP (patch 4, width 48, 1 layer) to fit the CI budget
    tok = WordTokenizer(vocabulary(), context_length=40)
    config = tiny_clip_config(
        len(tok), width=48, layers=1, patch_size=4, text_width=48, text_layers=1, heads=2,
        context_length=40, embed_dim=48,
    )  # fmt: skip
    data = shapes_corpus(64, seed=0, min_objects=2)
    return tok, config, data


def test_hf_clip_loss_equals_written_out_infonce(setup):
    tok, config, data = setup
    backend = HFCLIPBackend.from_config(config, seed=1)
    pixels, tokens = to_pixels(data.images[:16]), tok(data.recaptions[:16])
    with torch.no_grad():
        loss = backend.loss(pixels, tokens)
        img, txt = backend.encode_image(pixels), backend.encode_text(tokens)
        scale = backend.model.logit_scale.exp()
        logits = scale * txt @ img.T
        target = torch.arange(16)
        ref = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
    torch.testing.assert_close(loss, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_tiny_clip_memorises_64_pairs_in_200_steps(setup):
    tok, config, data = setup
    assert len(set(data.recaptions)) == 64
    backend = HFCLIPBackend.from_config(config, seed=0)
    pixels, tokens = to_pixels(data.images), tok(data.recaptions)
    losses = train_clip(backend, [(pixels, tokens)], steps=200, lr=3e-3, warmup=10)
    assert losses[-1] < losses[0]
    img, txt = embed(backend, pixels, tokens)
    got = retrieval_metrics(img, txt, np.arange(64), ks=(1,))
    assert got == {"t2i_R@1": 1.0, "i2t_R@1": 1.0}


def test_open_clip_backend_skips_here():
    pytest.importorskip(
        "open_clip",
        reason="open_clip imports torchvision, which cannot import beside CPU torch 2.13 "
        "(DECISIONS 15)",
    )
    from recap_datacomp.clip import OpenCLIPBackend

    model = __import__("open_clip").create_model("ViT-B-32")
    assert OpenCLIPBackend(model).loss is not None


def test_train_clip_rejects_bad_input(setup):
    _tok, config, _data = setup
    backend = HFCLIPBackend.from_config(config)
    with pytest.raises(ValueError, match="steps"):
        train_clip(backend, [], steps=0)
    with pytest.raises(ValueError, match="lr"):
        train_clip(backend, [], steps=1, lr=0.0)
    with pytest.raises(ValueError, match="batches"):
        train_clip(backend, [], steps=1)
