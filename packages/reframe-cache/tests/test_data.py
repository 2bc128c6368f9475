"""Video reading against OpenCV itself, the x2 degradation, and their bad input."""

import pytest
import torch
from reframe_cache.data import degrade_x2, opencv_sample, video_frames

cv2 = pytest.importorskip("cv2")


def _sample(name):
    try:
        return opencv_sample(name)
    except FileNotFoundError as err:
        pytest.skip(str(err))


def test_video_frames_equal_opencv_read_resize_and_rgb():
    path = _sample("vtest.avi")
    got = video_frames(path, (24, 32), n=3, start=2)
    cap = cv2.VideoCapture(str(path))
    raw = [cap.read()[1] for _ in range(5)][2:]
    cap.release()
    for t, bgr in enumerate(raw):
        rgb = cv2.cvtColor(
            cv2.resize(bgr, (32, 24), interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2RGB
        )
        assert torch.equal(got[t], torch.from_numpy(rgb).permute(2, 0, 1).float() / 255)
    assert got.shape == (3, 3, 24, 32)
    assert got.dtype == torch.float32


def test_megamind_has_270_frames():
    assert len(video_frames(_sample("Megamind.avi"), (8, 8))) == 270


def test_degrade_x2_keeps_shape_and_is_exact_on_constant_frames():
    x = torch.full((2, 3, 8, 8), 0.25)
    torch.testing.assert_close(degrade_x2(x), x)
    assert degrade_x2(torch.rand(1, 3, 6, 10)).shape == (1, 3, 6, 10)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda p: video_frames(p.parent / "missing.avi", (8, 8)), FileNotFoundError, "`path`"),
        (lambda p: video_frames(p, (8,)), ValueError, "`size`"),
        (lambda p: video_frames(p, (8, 0)), ValueError, "`size`"),
        (lambda p: video_frames(p, (8, 8), n=0), ValueError, "`n`"),
        (lambda p: video_frames(p, (8, 8), start=-1), ValueError, "`start`"),
        (lambda p: video_frames(p, (8, 8), start=10**6), ValueError, "`start`"),
        (lambda p: opencv_sample("../x"), ValueError, "`name`"),
        (lambda p: opencv_sample("nothing.avi"), FileNotFoundError, "apt-get install opencv-doc"),
        (lambda p: degrade_x2(torch.rand(3, 8, 8)), ValueError, "`frames`"),
        (lambda p: degrade_x2(torch.rand(1, 3, 7, 8)), ValueError, "even"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call(_sample("vtest.avi"))


def test_cornell_box_sequence_renders_colour_gbuffers_and_target(tmp_path):
    pytest.importorskip("mitsuba")
    from reframe_cache.data import cornell_box_sequence

    cache = tmp_path / "box.npz"
    seq = cornell_box_sequence(2, 32, 4, deg_per_frame=5.0, reference_spp=4, cache=cache)
    assert {k: tuple(v.shape) for k, v in seq.items()} == {
        "color": (2, 3, 32, 32),
        "albedo": (2, 3, 32, 32),
        "normal": (2, 3, 32, 32),
        "depth": (2, 1, 32, 32),
        "reference": (2, 3, 32, 32),
    }
    assert float(seq["albedo"].min()) >= 0
    assert float(seq["albedo"].max()) <= 1
    # a pixel's normal is a filter-weighted mean of unit shading normals: length <= 1, and 1
    # inside a face (a quarter of the pixels at 32x32); depth >= 0, the walls 1+ away
    lengths = seq["normal"].norm(dim=1)
    assert float(lengths.max()) <= 1 + 1e-4
    assert float(((lengths - 1).abs() < 1e-3).float().mean()) >= 0.25
    assert float(seq["depth"].min()) >= 0
    assert float(seq["depth"].median()) > 1
    assert not torch.equal(seq["albedo"][0], seq["albedo"][1])  # the camera moved
    again = cornell_box_sequence(2, 32, 4, deg_per_frame=5.0, reference_spp=4, cache=cache)
    for k, v in seq.items():
        assert torch.equal(again[k], v)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"n": 0}, "`n`"), ({"size": 4}, "`size`"), ({"spp": 0}, "`spp`")],
)
def test_cornell_box_bad_input(kwargs, match):
    from reframe_cache.data import cornell_box_sequence

    args = {"n": 1, "size": 16, "spp": 1} | kwargs
    with pytest.raises(ValueError, match=match):
        cornell_box_sequence(args.pop("n"), **args)
