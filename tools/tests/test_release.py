"""tools/release.py on a temporary copy of the fake repository (never on the real packages)."""

import pytest
from _catalogue import distributions
from release import ReleaseError, date_changelog, main, prepare

ALPHA_VERSION = "packages/alpha-lib/src/alpha_lib/_version.py"
ALPHA_CHANGELOG = "packages/alpha-lib/CHANGELOG.md"

ALPHA_RELEASED = """# Changelog

All notable changes to `alpha-lib` are recorded here.

## Unreleased

## 0.2.0 (2026-03-01)

### Fixed

- `fit` refuses NaN.

## 0.1.0 (2026-01-05)

### Added

- `fit`.
"""


def test_release_bumps_the_version_and_dates_the_changelog(release_repo, capsys):
    assert main(["alpha-lib", "0.2.0", "--date", "2026-03-01"], root=release_repo) == 0
    version = (release_repo / ALPHA_VERSION).read_text()
    assert version == '"""Version."""\n\n__version__ = "0.2.0"\n'
    assert (release_repo / ALPHA_CHANGELOG).read_text() == ALPHA_RELEASED
    out = capsys.readouterr().out
    assert out.startswith("alpha-lib: 0.1.0 -> 0.2.0\n")
    assert "tag: alpha-lib-v0.2.0" in out
    assert f"  git add {ALPHA_VERSION} {ALPHA_CHANGELOG}\n" in out
    assert '  git tag -a alpha-lib-v0.2.0 -m "alpha-lib 0.2.0"\n' in out
    assert "  git push origin alpha-lib-v0.2.0\n" in out
    assert "PyPI has a release of icml25-core>=0.1,<0.2" in out


def test_the_core_is_released_the_same_way(release_repo, capsys):
    assert main(["icml25-core", "0.1.1", "--date", "2026-03-01"], root=release_repo) == 0
    assert (release_repo / "shared/src/icml25_core/_version.py").read_text() == (
        '__version__ = "0.1.1"\n'
    )
    changelog = (release_repo / "shared/CHANGELOG.md").read_text()
    assert changelog == (
        "# Changelog\n\n## Unreleased\n\n## 0.1.1 (2026-03-01)\n\n### Added\n\n"
        "- `seed_everything`.\n"
    )
    out = capsys.readouterr().out
    assert "  git push origin icml25-core-v0.1.1\n" in out
    assert "PyPI has a release of icml25-core" not in out


def test_dry_run_shows_the_diff_and_writes_nothing(release_repo, capsys):
    before = {p: (release_repo / p).read_text() for p in (ALPHA_VERSION, ALPHA_CHANGELOG)}
    argv = ["alpha-lib", "0.2.0", "--date", "2026-03-01", "--dry-run"]
    assert main(argv, root=release_repo) == 0
    assert {p: (release_repo / p).read_text() for p in before} == before
    out = capsys.readouterr().out
    assert f"+++ b/{ALPHA_VERSION}\n" in out
    assert '-__version__ = "0.1.0"\n+__version__ = "0.2.0"\n' in out
    assert "+## 0.2.0 (2026-03-01)\n" in out
    assert "dry run: nothing written" in out
    assert "tag: alpha-lib-v0.2.0" in out


def test_a_pre_release_of_a_library_without_the_core(release_repo):
    (release_repo / "packages/beta-v2/CHANGELOG.md").write_text("## Unreleased\n\n- b\n")
    for version in ("1.0.0rc2", "1.0.0"):
        release = prepare("beta-v2", version, "2026-03-01", release_repo)
        assert (release.current, release.tag) == ("1.0.0rc1", f"beta-v2-v{version}")
        assert release.core_range is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["alpha", "0.2.0"], "unknown distribution 'alpha' (did you mean 'alpha-lib'?)"),
        (["alpha-lib", "0.1.0"], "version 0.1.0 is not greater than the current 0.1.0"),
        (["alpha-lib", "0.1.0rc1"], "is not greater than the current 0.1.0"),
        (["alpha-lib", "0.1"], "version 0.1 is not greater than the current 0.1.0"),
        (["alpha-lib", "v0.2.0"], "not a normalised PEP 440 version"),
        (["alpha-lib", "0.2.0-rc1"], "not a normalised PEP 440 version"),
        (["beta-v2", "1.0.0"], "nothing to release"),  # its Unreleased section is empty
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_written(release_repo, capsys, argv, message):
    before = sorted((p, p.read_bytes()) for p in release_repo.rglob("*") if p.is_file())
    assert main(argv, root=release_repo) == 1
    assert message in capsys.readouterr().err
    assert sorted((p, p.read_bytes()) for p in release_repo.rglob("*") if p.is_file()) == before


def test_bad_date_is_a_usage_error(release_repo, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["alpha-lib", "0.2.0", "--date", "2026-02-30"], root=release_repo)
    assert stop.value.code == 2
    assert "'2026-02-30' is not a date YYYY-MM-DD" in capsys.readouterr().err


def test_missing_changelog_is_named(release_repo):
    (release_repo / ALPHA_CHANGELOG).unlink()
    with pytest.raises(ReleaseError, match=r"CHANGELOG\.md not found"):
        prepare("alpha-lib", "0.2.0", "2026-03-01", release_repo)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# Changelog\n\n## 0.1.0 (2026-01-05)\n\n- x\n", "exactly one '## Unreleased'"),
        ("## Unreleased\n\n- a\n\n## Unreleased\n\n- b\n", "exactly one '## Unreleased'"),
        ("## Unreleased\n\n\n## 0.1.0 (2026-01-05)\n\n- x\n", "nothing to release"),
    ],
)
def test_changelogs_without_one_filled_unreleased_section_are_refused(text, message):
    with pytest.raises(ReleaseError, match=message):
        date_changelog(text, "0.2.0", "2026-03-01")


def test_subsections_stay_with_their_release():
    text = "## Unreleased\n- a\n### Added\n- b\n## 0.1.0 (2026-01-05)\n- x\n"
    assert date_changelog(text, "0.2.0", "2026-03-01") == (
        "## Unreleased\n\n## 0.2.0 (2026-03-01)\n\n- a\n### Added\n- b\n\n"
        "## 0.1.0 (2026-01-05)\n- x\n"
    )


def test_every_real_changelog_has_the_heading_release_moves():
    # read only: each distribution of the repository keeps exactly one "## Unreleased"
    for dist, folder in distributions().items():
        lines = (folder / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
        assert [line.rstrip() for line in lines].count("## Unreleased") == 1, dist
