"""What the README's blocks compute, on the CSV the conftest writes from the paper's Hines DGP 3
(the shared contract runs the blocks)."""


def test_readme_finds_the_covariate_that_drives_the_effect(readme):
    summary = readme.namespace["est"].summary()
    assert list(summary.index) == ["x1", "x2", "x3", "x4", "x5", "x6"]
    assert summary.loc["x2", "significant"]  # ψ_2 = 3: found at n = 600
