import pytest
import torch
from phonepure import align_pocketsphinx, load


def test_front_center_phones(alsa_dir):
    pytest.importorskip("pocketsphinx")
    w = load(alsa_dir / "Front_Center.wav")
    al = align_pocketsphinx(w, "front center")
    phones = [p for p in al.phones if p != "sil"]
    assert phones == ["F", "R", "AH", "N", "T", "S", "EH", "N", "T", "ER"]
    assert al.n_frames == 1 + w.shape[-1] // 128
    stressed = align_pocketsphinx(w, "front center", stress=True)
    assert [p for p in stressed.phones if p != "sil"][2] == "AH1"


def test_fallback_gives_alignment_or_none(alsa_dir):
    pytest.importorskip("pocketsphinx")
    w = torch.zeros(8000)
    with pytest.warns(UserWarning):  # noqa: PT030
        al = align_pocketsphinx(w + 1e-4 * torch.randn(8000), "front center")
    assert al is None or al.n_frames == 1 + 8000 // 128


def test_bad_input():
    with pytest.raises(ValueError, match="text"):
        align_pocketsphinx(torch.zeros(1000), "   ")
    with pytest.raises(ValueError, match="sr"):
        align_pocketsphinx(torch.zeros(1000), "a", sr=8000)
    with pytest.raises(ValueError, match="shape"):
        align_pocketsphinx(torch.zeros(2, 1000), "a")
    with pytest.raises(ValueError, match="NaN"):
        align_pocketsphinx(torch.full((1000,), float("nan")), "a")
