import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

ALSA = Path("/usr/share/sounds/alsa")
os.environ.setdefault("OMP_NUM_THREADS", "1")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when Triton kernels are decorated
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def encoder():
    pytest.importorskip("resemblyzer", reason="extra [sv] not installed")
    from phonepure import GE2E

    return GE2E.from_resemblyzer()


@pytest.fixture(scope="session")
def alsa_dir():
    if not (ALSA / "Front_Center.wav").exists():
        pytest.skip("Debian alsa-utils recordings missing: apt-get install alsa-utils")
    return ALSA


@pytest.fixture(scope="session")
def espeak(tmp_path_factory):
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng missing: apt-get install espeak-ng")
    from phonepure import load

    folder = tmp_path_factory.mktemp("espeak")
    cache = {}

    def say(text: str, voice: str = "en-us+m3") -> torch.Tensor:
        key = (text, voice)
        if key not in cache:
            out = folder / f"{len(cache)}.wav"
            subprocess.run([exe, "-v", voice, "-s", "150", "-w", str(out), text], check=True)
            cache[key] = load(out)[0]
        return cache[key]

    return say


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """What a README user has: a speech clip of their own (here an alsa-utils recording, or a
    synthetic vowel where that package is missing)."""
    import numpy as np
    import soundfile as sf

    src = ALSA / "Front_Center.wav"
    if src.exists():
        data, sr = sf.read(src)
    else:
        sr = 16000
        t = np.arange(sr) / sr
        data = 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 3 * t))
    sf.write(readme_folder / "speech.wav", data, sr)
    return readme_folder
