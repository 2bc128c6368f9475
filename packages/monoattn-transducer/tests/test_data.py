"""Spoken-number corpus: morpheme cutting, synthesis, features (spec section 4)."""

import numpy as np
import pytest

pytest.importorskip("num2words")
from monoattn_transducer.data.spoken_numbers import (
    english_words,
    german_morphemes,
)


def test_german_morphemes_reorder_units_before_tens():
    assert german_morphemes(21) == ["ein", "und", "zwanzig"]
    assert german_morphemes(97) == ["sieben", "und", "neunzig"]
    assert german_morphemes(1) == ["eins"]
    assert german_morphemes(17) == ["siebzehn"]
    assert german_morphemes(30) == ["dreißig"]
    assert english_words(47) == "forty seven"


def test_every_number_joins_back_to_num2words():
    from num2words import num2words

    for n in range(1, 100):
        assert "".join(german_morphemes(n)) == num2words(n, lang="de")


def test_synthesize_and_log_mel():
    pytest.importorskip("espeakng_loader")
    pytest.importorskip("librosa")
    from monoattn_transducer.data.spoken_numbers import log_mel, synthesize

    w = synthesize("forty seven", "en-us")
    assert w.dtype == np.int16
    assert 0.4 < len(w) / 22050 < 1.5
    f = log_mel(w)
    assert f.shape[1] == 80
    assert abs(f.shape[0] - len(w) / 220.5) < 3
    with pytest.raises(ValueError, match="voice"):
        synthesize("one", "xx-nonexistent")
    with pytest.raises(ValueError, match="text"):
        synthesize("  ")
