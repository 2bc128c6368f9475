"""What the README's usage block builds and scores on real photos laid out as a user's folders
(the conftest's `readme_folder`; the shared contract runs the block)."""

import pytest
import skimage.data
from PIL import Image


@pytest.mark.slow
def test_readme_usage_builds_and_scores_the_distortions(readme):
    assert readme.namespace["stats"] == {"images": 1, "written": 30, "skipped": 0}
    results = readme.namespace["results"]
    assert len(results.accuracy) == 30
    assert 0 <= results.mean() <= 1
    assert readme.namespace["transform"](Image.fromarray(skimage.data.coffee())).size == (224, 224)
