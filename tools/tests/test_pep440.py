"""tools/_pep440.py: PEP 440's ordering and specifiers, on the examples of the PEP itself."""

import pytest
from _pep440 import Version, VersionError, parse_specifiers, satisfying

# PEP 440, "Summary of permitted suffixes and relative ordering", in ascending order.
ASCENDING = [
    "1.0.dev456",
    "1.0a1",
    "1.0a2.dev456",
    "1.0a12.dev456",
    "1.0a12",
    "1.0b1.dev456",
    "1.0b2",
    "1.0b2.post345.dev456",
    "1.0b2.post345",
    "1.0rc1.dev456",
    "1.0rc1",
    "1.0",
    "1.0.post456.dev34",
    "1.0.post456",
    "1.0.1",
    "1.1.dev1",
]


def test_versions_sort_in_pep_440_order():
    shuffled = ASCENDING[::2] + ASCENDING[1::2]
    assert [str(v) for v in sorted(map(Version, shuffled))] == ASCENDING


def test_trailing_zeros_do_not_change_a_version():
    assert Version("1.0") == Version("1.0.0")
    assert hash(Version("1.0")) == hash(Version("1.0.0"))
    assert Version("1.0.1") > Version("1.0")


@pytest.mark.parametrize("text", ["v1.0", "1.0-rc1", "1.0RC1", "1!1.0", "1.0+local", "01.0", ""])
def test_unnormalised_versions_are_refused(text):
    with pytest.raises(VersionError, match="normalised PEP 440"):
        Version(text)


def test_a_version_must_be_a_str():
    with pytest.raises(TypeError, match="must be a str"):
        Version(1.0)


FINALS = ["0.0.9", "0.1.0", "0.1.5", "0.1.5.post1", "0.2.0", "0.2.1", "1.0.0"]


@pytest.mark.parametrize(
    ("specifiers", "expected"),
    [
        (">=0.1,<0.2", ["0.1.5.post1", "0.1.5", "0.1.0"]),
        ("~=0.1.0", ["0.1.5.post1", "0.1.5", "0.1.0"]),
        ("~=0.1", ["0.2.1", "0.2.0", "0.1.5.post1", "0.1.5", "0.1.0"]),
        ("==0.1.*", ["0.1.5.post1", "0.1.5", "0.1.0"]),
        ("!=0.1.*", ["1.0.0", "0.2.1", "0.2.0", "0.0.9"]),
        ("==0.2", ["0.2.0"]),
        ("!=0.2,>0.1.5", ["1.0.0", "0.2.1"]),  # >0.1.5 leaves out 0.1.5.post1
        (">0.1.5.post1", ["1.0.0", "0.2.1", "0.2.0"]),
        ("<=0.1.0", ["0.1.0", "0.0.9"]),
        ("", ["1.0.0", "0.2.1", "0.2.0", "0.1.5.post1", "0.1.5", "0.1.0", "0.0.9"]),
        (">=2", []),
    ],
)
def test_specifiers_select_like_pip(specifiers, expected):
    assert satisfying(specifiers, FINALS) == expected


def test_pre_releases_count_only_when_a_specifier_names_one():
    published = ["0.1.0", "0.2.0rc1", "0.2.0.dev3"]
    assert satisfying(">=0.2", published) == []
    assert satisfying(">=0.2.0rc1", published) == ["0.2.0rc1"]
    assert satisfying(">=0.2.0.dev1", published) == ["0.2.0rc1", "0.2.0.dev3"]


def test_less_than_a_final_excludes_its_pre_releases():
    assert satisfying("<0.2,>=0.2.0a1", ["0.2.0a1", "0.2.0rc1", "0.1.9"]) == []
    assert satisfying("<0.2.0rc1,>=0.2.0a1", ["0.2.0a1", "0.2.0rc1"]) == ["0.2.0a1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("=>0.1", "not an operator"),
        ("0.1", "not an operator"),
        (">=0.1.*", "only == and != take a trailing"),
        ("==0.1rc1.*", "only == and != take a trailing"),
        ("~=1", "at least two release numbers"),
        (">=v1", "normalised PEP 440"),
    ],
)
def test_bad_specifiers_are_refused(text, message):
    with pytest.raises(VersionError, match=message):
        parse_specifiers(text)


def test_specifiers_must_be_a_str():
    with pytest.raises(TypeError, match="specifiers must be a str"):
        parse_specifiers([">=0.1"])
